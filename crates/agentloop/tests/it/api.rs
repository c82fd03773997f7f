//! `agentloop serve` over real HTTP on 127.0.0.1: tokens, routes, bad bodies, control
//! requests that land in the journal, and the resumable event stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Project;

struct Serve {
    child: Child,
    addr: String,
    token: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(p: &Project) -> Serve {
    let mut child = p
        .cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line.trim().rsplit("http://").next().unwrap().to_string();
    std::thread::spawn(move || for _ in err.lines() {});
    let token = std::fs::read_to_string(p.path().join(".git/xdg-state/agentloop/token")).unwrap();
    Serve { child, addr, token }
}

/// (status, body) of one HTTP/1.1 request.
fn http(
    s: &Serve,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or("");
    write!(c, "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

#[test]
fn routes_tokens_and_bodies() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let s = serve(&p);
    let t = Some(s.token.as_str());
    assert_eq!(http(&s, "GET", "/api/runs", None, None).0, 401);
    assert_eq!(
        http(
            &s,
            "GET",
            "/api/runs",
            Some("wrong-token-wrong-token-wrong-token-wrong-token"),
            None
        )
        .0,
        401
    );
    let (code, body) = http(&s, "GET", "/api/runs", t, None);
    assert_eq!(code, 200);
    let runs = json_of(&body)["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 1);
    let id = runs[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(
        (
            runs[0]["tasks_done"].as_u64(),
            runs[0]["tasks_total"].as_u64()
        ),
        (Some(3), Some(3))
    );
    let (code, body) = http(
        &s,
        "GET",
        &format!("/api/runs/{id}?token={}", s.token),
        None,
        None,
    );
    assert_eq!(code, 200, "the token may come as a query parameter");
    assert!(
        json_of(&body)["progress_md"]
            .as_str()
            .unwrap()
            .contains("## Completed Tasks")
    );
    let (code, body) = http(&s, "GET", &format!("/api/runs/{id}/iterations/2"), t, None);
    assert_eq!(code, 200);
    let it = json_of(&body);
    assert!(
        it["verify_log"]
            .as_str()
            .unwrap()
            .contains("FAIL: expected 'HELLO, ADA!'")
    );
    assert_eq!(it["result"]["outcome"], "failed");
    assert_eq!(
        http(&s, "GET", &format!("/api/runs/{id}/iterations"), t, None).0,
        200
    );
    assert_eq!(http(&s, "GET", "/api/runs/nope", t, None).0, 404);
    assert_eq!(
        http(&s, "GET", &format!("/api/runs/{id}/iterations/99"), t, None).0,
        404
    );
    // Bad bodies: malformed, unknown fields, unknown actions, oversize.
    let control = format!("/api/runs/{id}/control");
    assert_eq!(http(&s, "POST", &control, t, Some("{nope")).0, 400);
    let (code, body) = http(
        &s,
        "POST",
        &control,
        t,
        Some(r#"{"request_id":"a","action":"pause","extra":1}"#),
    );
    assert_eq!(code, 400);
    assert!(
        json_of(&body)["error"]
            .as_str()
            .unwrap()
            .contains("unknown field `extra`"),
        "{body}"
    );
    assert_eq!(
        http(
            &s,
            "POST",
            &control,
            t,
            Some(r#"{"request_id":"a","action":"dance"}"#)
        )
        .0,
        400
    );
    let big = format!(
        r#"{{"request_id":"a","action":"steer","note":"{}"}}"#,
        "x".repeat(100_000)
    );
    assert_eq!(http(&s, "POST", &control, t, Some(&big)).0, 413);
    // A completed run takes no more requests.
    assert_eq!(
        http(
            &s,
            "POST",
            &control,
            t,
            Some(r#"{"request_id":"a","action":"pause"}"#)
        )
        .0,
        409
    );
}

#[test]
fn control_requests_are_idempotent_journal_appends_and_events_resume() {
    let p = Project::git();
    crate::support::scripted(
        &p,
        "# G\n\n## T1: A\nVerify: true\nGate: before\n",
        "cat >/dev/null; echo TASK_COMPLETE\n",
        "",
    );
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let s = serve(&p);
    let t = Some(s.token.as_str());
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let control = format!("/api/runs/{id}/control");
    let body = r#"{"request_id":"req-1","action":"approve","note":"go"}"#;
    let (code, first) = http(&s, "POST", &control, t, Some(body));
    assert_eq!(code, 200, "{first}");
    let first = json_of(&first);
    assert_eq!(first["duplicate"], false);
    let (_, again) = http(&s, "POST", &control, t, Some(body));
    let again = json_of(&again);
    assert_eq!(
        (again["seq"].clone(), again["duplicate"].clone()),
        (first["seq"].clone(), json!(true)),
        "the same request id is one request"
    );
    let log = p.run(&["log", "--json"]).stdout;
    assert_eq!(log.matches("\"action\":\"approve\"").count(), 1);
    assert_eq!(p.status()["gate"], Value::Null);
    // The event stream from event 2 on: the first event sent is 3.
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "GET /api/runs/{id}/events?token={} HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 2\r\n\r\n",
        s.token
    )
    .unwrap();
    let mut r = BufReader::new(c);
    let (mut ids, start) = (Vec::new(), Instant::now());
    let mut line = String::new();
    while ids.len() < 2 && start.elapsed() < Duration::from_secs(10) {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(v) = line.trim().strip_prefix("id:") {
            ids.push(v.trim().parse::<u64>().unwrap());
        }
    }
    assert_eq!(ids, vec![3, 4]);
}

#[test]
fn the_openapi_document_matches_the_served_routes() {
    let doc: Value = serde_json::from_str(agentloop_server::OPENAPI).unwrap();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    let mut served: Vec<(String, String)> = agentloop_server::ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    served.sort();
    assert_eq!(documented, served);
    // And every documented route answers (401 without a token, not 404/405).
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let s = serve(&p);
    for (method, path) in &served {
        let path = path.replace("{id}", "x").replace("{n}", "1");
        let (code, _) = http(&s, &method.to_uppercase(), &path, None, Some("{}"));
        assert_eq!(code, 401, "{method} {path}");
    }
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let (code, body) = http(
        &s,
        "GET",
        &format!("/api/runs/{id}/plan"),
        Some(&s.token),
        None,
    );
    assert_eq!(code, 200);
    assert!(
        json_of(&body)["versions"][0]["markdown"]
            .as_str()
            .unwrap()
            .starts_with("# Greeter")
    );
}

#[test]
fn the_all_runs_stream_resumes_every_run() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    assert_eq!(
        p.run(&["run", "--quiet"]).code,
        Some(0),
        "a second run of the same plan (all tasks pass again)"
    );
    let s = serve(&p);
    let read_ids = |last: Option<&str>, want: usize| {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let resume = last
            .map(|l| format!("Last-Event-ID: {l}\r\n"))
            .unwrap_or_default();
        write!(
            c,
            "GET /api/events?token={} HTTP/1.1\r\nHost: x\r\n{resume}\r\n",
            s.token
        )
        .unwrap();
        let mut r = BufReader::new(c);
        let mut ids = Vec::new();
        let mut line = String::new();
        while ids.len() < want {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if let Some(v) = line.trim().strip_prefix("id:") {
                ids.push(v.trim().to_string());
            }
        }
        ids
    };
    let first = read_ids(None, 25);
    assert_eq!(first.len(), 25);
    let runs: std::collections::BTreeSet<String> = first
        .last()
        .unwrap()
        .split(',')
        .map(|p| p.split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(runs.len(), 2, "both runs appear: {:?}", first.last());
    // Resuming from the 25th id gives the 26th event next, nothing repeated.
    let again = read_ids(Some(first.last().unwrap()), 1);
    let all = read_ids(None, 26);
    assert_eq!(again[0], all[25]);
}
