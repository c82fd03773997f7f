//! Notifications: a webhook POST, a command, a desktop notification — fired when a run
//! waits for a person, hits a usage limit, trips a breaker, completes or fails. They
//! run in the background and never hold the loop up.

use std::io::Write;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use agentloop_ground::values::Notify;
use agentloop_journal::Record;
use agentloop_journal::RunState;
use agentloop_journal::{Event, FinishReason, Outcome, Rung};
use serde_json::{Value, json};

/// The notification an event calls for, if any.
pub fn payload(s: &RunState, r: &Record) -> Option<Value> {
    let (kind, message) = match &r.event {
        Event::GateOpened { gate } => (
            "waiting",
            match s.surface_gate_changes() {
                // The files and their diffs: a person can decide from the message.
                Some(changes) => format!(
                    "waiting for a person: {}\n{}",
                    gate.describe(),
                    changes
                        .iter()
                        .map(|c| format!("{}\n{}", c.describe(), c.diff))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
                None => std::iter::once(format!("waiting for a person: {}", gate.describe()))
                    .chain(crate::describe::held(s, gate))
                    .collect::<Vec<_>>()
                    .join("\n"),
            },
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
        } => {
            let v = agentloop_journal::verdict(s);
            (
                "completed",
                format!(
                    "{} · verdict {}: {}",
                    s.completion_words(),
                    v.as_str(),
                    v.meaning()
                ),
            )
        }
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
        "verdict": agentloop_journal::verdict(s),
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
            match post(url, &text, n.webhook_ca.as_deref()) {
                Ok(code) if code < 400 => {}
                Ok(code) => crate::render::warn(&format!("webhook {url} answered {code}")),
                Err(e) => crate::render::warn(&format!("webhook {url} failed: {e}")),
            }
        }
        // Started as ours, so the driver's end-of-iteration sweep of what the agent
        // left behind does not take them.
        use agentloop_exec::reap;
        if let Some((program, args)) = n.command.split_first()
            && let Ok(mut child) = reap::spawn_spared(
                Command::new(program)
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            )
        {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = child.wait();
            reap::release(child.id());
        }
        if n.desktop {
            let title = format!("agentloop: {}", body["title"].as_str().unwrap_or("run"));
            if let Ok(mut child) = reap::spawn_spared(
                Command::new("notify-send")
                    .arg(title)
                    .arg(body["message"].as_str().unwrap_or(""))
                    .stderr(Stdio::null()),
            ) {
                let _ = child.wait();
                reap::release(child.id());
            }
        }
    }))
}

/// A JSON POST to an `http://` or `https://` URL within 5 s; returns the status code.
/// With `ca`, an https server must present a certificate from that CA (PEM).
fn post(url: &str, body: &str, ca: Option<&std::path::Path>) -> Result<u16, String> {
    use ureq::tls::{PemItem, RootCerts, TlsConfig};
    let mut tls = TlsConfig::builder();
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            return Err(format!("{}: no certificate in it", ca.display()));
        }
        tls = tls.root_certs(RootCerts::new_with_certs(&certs));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .user_agent("agentloop")
        .tls_config(tls.build())
        .build()
        .into();
    let response = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body)
        .map_err(|e| e.to_string())?;
    Ok(response.status().as_u16())
}
