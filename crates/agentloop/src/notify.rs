//! Notifications: a webhook POST, a command, a desktop notification — fired when a run
//! waits for a person, hits a usage limit, trips a breaker, completes or fails. They
//! run in the background and never hold the loop up.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use agentloop_core::config::Notify;
use agentloop_core::event::{Event, FinishReason, Outcome, Rung};
use agentloop_core::journal::Record;
use agentloop_core::state::RunState;
use serde_json::{Value, json};

/// The notification an event calls for, if any.
pub fn payload(s: &RunState, r: &Record) -> Option<Value> {
    let (kind, message) = match &r.event {
        Event::GateOpened { gate } => (
            "waiting",
            format!("waiting for a person: {}", gate.describe()),
        ),
        Event::IterationFinished(f) if f.outcome == Outcome::Blocked => {
            ("blocked", f.reason.clone())
        }
        Event::Escalated {
            task,
            trigger,
            rung: Rung::Block,
            ..
        } => {
            let kind = if trigger.is_breaker() {
                "breaker"
            } else {
                "blocked"
            };
            (
                kind,
                format!("task {task} is blocked: {}", trigger.describe()),
            )
        }
        Event::LimitHit { message, .. } => (
            "usage_limit",
            format!("waiting for a usage limit to reset: {message}"),
        ),
        Event::RunFinished {
            reason: FinishReason::Completed,
            ..
        } => ("completed", "every task is done and verified".into()),
        Event::RunFinished { reason, status } if status.as_str() == "failed" => {
            ("failed", reason.describe())
        }
        _ => return None,
    };
    Some(json!({
        "event": kind,
        "message": message,
        "run_id": s.run_id,
        "title": s.plan.title,
        "status": s.status,
        "tasks_done": s.done_count(),
        "tasks_total": s.tasks.len(),
        "cost_usd": s.cost_usd,
        "seq": r.seq,
        "time": r.time,
    }))
}

/// Sends one notification everywhere configured, in a background thread.
pub fn send(n: &Notify, body: Value) -> Option<JoinHandle<()>> {
    if n.webhook.is_none() && n.command.is_empty() && !n.desktop {
        return None;
    }
    let n = n.clone();
    Some(std::thread::spawn(move || {
        let text = body.to_string();
        if let Some(url) = &n.webhook {
            let _ = post(url, &text);
        }
        if let Some((program, args)) = n.command.split_first()
            && let Ok(mut child) = Command::new(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
        {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = child.wait();
        }
        if n.desktop {
            let title = format!("agentloop: {}", body["title"].as_str().unwrap_or("run"));
            let _ = Command::new("notify-send")
                .arg(title)
                .arg(body["message"].as_str().unwrap_or(""))
                .stderr(Stdio::null())
                .status();
        }
    }))
}

/// A JSON POST to an `http://host[:port]/path` URL (5 s timeouts).
fn post(url: &str, body: &str) -> std::io::Result<u16> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| std::io::Error::other("not an http:// URL"))?;
    let (authority, path) = rest
        .split_once('/')
        .map(|(a, p)| (a, format!("/{p}")))
        .unwrap_or((rest, "/".into()));
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let sock = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let mut c = TcpStream::connect_timeout(&sock, Duration::from_secs(5))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    c.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(
        c,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: agentloop\r\n\r\n{body}",
        body.len()
    )?;
    let mut head = [0u8; 12];
    c.read_exact(&mut head)?;
    Ok(std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}
