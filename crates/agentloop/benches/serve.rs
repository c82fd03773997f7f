//! Load on `agentloop serve` over loopback: a busy run (a driver going through
//! trivial tasks as fast as it can), `CLIENTS` SSE clients following it (default 50),
//! and `REQUESTS` control requests (default 1,000, steer notes from 4 threads) while it
//! runs. Prints control-request latency, event delivery latency (journal write → SSE
//! client), whether every client got every event, and the server's memory.
//!
//! `cargo bench -p agentloop --bench serve` (`TRUST=off`: a busy run without the surface
//! check and the clean copy, whose git processes share the CPU with the server)

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_agentloop");

/// Resident and peak memory of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn post(addr: &str, token: &str, path: &str, body: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    write!(
        c,
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let code = out[9..12].parse().unwrap();
    (code, out.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let clients = common::env_usize("CLIENTS", 50);
    let requests = common::env_usize("REQUESTS", 1000);
    let tasks = common::env_usize("TASKS", 300);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let state = root.join("state");
    let mut plan = String::from("# Busy\n\n");
    for i in 0..tasks {
        plan.push_str(&format!("## T{i}: task {i}\n\nNothing to do.\n\n"));
    }
    std::fs::write(root.join("PLAN.md"), plan).unwrap();
    // Each iteration takes ≈ 50 ms of "agent": a steady stream of events.
    std::fs::write(
        root.join("agentloop.toml"),
        format!(
            "[run]\nagent = \"quick\"\nshape = \"tool\"\n[budgets]\nmax_iterations = 100000\n[agents.quick]\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; sleep 0.05; echo TASK_COMPLETE\"]\n{}",
            // `TRUST=off`: no surface check or clean copy in the busy run, to see the
            // server's own share of the latency.
            if std::env::var("TRUST").as_deref() == Ok("off") {
                "[verify]\non_protected_change = \"allow\"\nclean_copy = false\n"
            } else {
                ""
            }
        ),
    )
    .unwrap();
    let cmd = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(root)
            .env("XDG_STATE_HOME", &state)
            .env("XDG_CONFIG_HOME", root.join("no-config"))
            .stdin(Stdio::null());
        c
    };
    let mut serve = cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(serve.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    std::thread::spawn(move || for _ in err.lines() {});
    let serve = Killed(serve);
    let pid = serve.0.id();
    let addr = line.trim().rsplit("http://").next().unwrap().to_string();
    let token = std::fs::read_to_string(state.join("agentloop/token")).unwrap();
    let idle = memory_kib(pid).0;

    let driver = Killed(
        cmd(&["run", "--quiet", "--force", "--run-id", "busy"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let journal = root.join(".agentloop/runs/busy/journal.jsonl");
    while !journal.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }

    // The SSE clients: each records every sequence number and how late it arrived.
    let delays = Arc::new(Mutex::new(Vec::<f64>::new()));
    let mut followers = Vec::new();
    for _ in 0..clients {
        let (addr, token, delays) = (addr.clone(), token.clone(), delays.clone());
        followers.push(std::thread::spawn(move || {
            let mut c = TcpStream::connect(&addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            write!(
                c,
                "GET /api/runs/busy/events?token={token} HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            .unwrap();
            let mut r = BufReader::new(c);
            let mut seqs = Vec::new();
            let mut mine = Vec::new();
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let Some(data) = line.trim().strip_prefix("data:") else {
                    continue;
                };
                let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
                let seq = v["seq"].as_u64().unwrap();
                seqs.push(seq);
                if let Some(t) = v["time"]
                    .as_str()
                    .and_then(|t| humantime::parse_rfc3339(t).ok())
                {
                    let sent = t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0;
                    mine.push(now_ms() - sent);
                }
                if v["event"]["kind"] == "run_finished" {
                    break;
                }
            }
            delays.lock().unwrap().extend(mine);
            seqs
        }));
    }
    std::thread::sleep(Duration::from_millis(500));
    let with_clients = memory_kib(pid).0;

    // The control requests, from 4 threads at once.
    let started = Instant::now();
    let per = requests / 4;
    let mut senders = Vec::new();
    for t in 0..4 {
        let (addr, token) = (addr.clone(), token.clone());
        senders.push(std::thread::spawn(move || {
            let mut lat = Vec::new();
            for i in 0..per {
                let body = format!(
                    r#"{{"request_id":"load-{t}-{i}","action":"steer","note":"note {t}-{i}"}}"#
                );
                let t0 = Instant::now();
                let (code, text) = post(&addr, &token, "/api/runs/busy/control", &body);
                lat.push(t0.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(code, 200, "{text}");
            }
            lat
        }));
    }
    let mut latencies: Vec<f64> = senders
        .into_iter()
        .flat_map(|s| s.join().unwrap())
        .collect();
    let control_wall = started.elapsed();
    let during = memory_kib(pid).0;
    // The run goes on; stop it and let every client see the end.
    let (code, _) = post(
        &addr,
        &token,
        "/api/runs/busy/control",
        r#"{"request_id":"load-stop","action":"stop"}"#,
    );
    assert_eq!(code, 200);
    let mut driver = driver;
    let _ = driver.0.wait();
    let all: Vec<Vec<u64>> = followers.into_iter().map(|f| f.join().unwrap()).collect();
    let (rss, peak) = memory_kib(pid);
    let last = std::fs::read_to_string(&journal).unwrap().lines().count() as u64;
    let complete = all
        .iter()
        .filter(|seqs| **seqs == (1..=last).collect::<Vec<u64>>())
        .count();
    latencies.sort_by(f64::total_cmp);
    let mut delays = delays.lock().unwrap().clone();
    delays.sort_by(f64::total_cmp);
    let iterations = std::fs::read_to_string(&journal)
        .unwrap()
        .matches("\"iteration_finished\"")
        .count();

    println!(
        "busy run: {iterations} iterations, {last} journal events in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "control: {} requests in {:.2}s ({:.0}/s), latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        control_wall.as_secs_f64(),
        latencies.len() as f64 / control_wall.as_secs_f64(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(0.0)
    );
    println!(
        "events: {complete}/{clients} clients got all {last} events in order; delivery p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        percentile(&delays, 0.5),
        percentile(&delays, 0.99),
        delays.last().copied().unwrap_or(0.0)
    );
    println!(
        "server memory: idle {:.1} MB, {clients} clients {:.1} MB, under load {:.1} MB, after {:.1} MB, peak {:.1} MB",
        idle as f64 / 1024.0,
        with_clients as f64 / 1024.0,
        during as f64 / 1024.0,
        rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    assert_eq!(complete, clients, "some client missed events");
    drop(serve);
}
