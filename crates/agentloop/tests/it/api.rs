//! `agentloop serve` over real HTTP on 127.0.0.1: tokens, routes, bad bodies, control
//! requests that land in the journal, and the resumable event stream.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Scratch;
use crate::support::{Project, Serve, http_request, serve};

/// (status, body) of one HTTP/1.1 request to the server.
fn http(
    s: &Serve,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    http_request(&s.addr, method, path, token, body)
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
    let p = Scratch::new()
        .plan("# G\n\n## T1: A\nVerify: true\nGate: before\n")
        .agent("cat >/dev/null; echo TASK_COMPLETE\n")
        .build();
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

/// Same request, same effect as the CLI: `resume` of a hook-mode run is refused (it
/// goes on in its session) rather than accepted with nothing to drive it.
#[test]
fn resuming_a_hook_mode_run_through_the_api_is_refused_as_the_cli_refuses_it() {
    let p = Scratch::new()
        .plan("# G\n\n## T1: A\nVerify: test -f a\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    assert_eq!(p.run(&["pause"]).code, Some(0));
    let cli = p.run(&["resume"]);
    assert_eq!(cli.code, Some(2), "{}", cli.stderr);
    let s = serve(&p);
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let (code, body) = http(
        &s,
        "POST",
        &format!("/api/runs/{id}/control"),
        Some(&s.token),
        Some(r#"{"request_id":"r","action":"resume"}"#),
    );
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("is a hook-mode run"), "{body}");
    assert!(body.contains("resume --headless"), "{body}");
    assert_eq!(p.status()["status"], "paused", "nothing changed");
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
    let first = read_ids(None, 30);
    assert_eq!(first.len(), 30);
    let runs: std::collections::BTreeSet<String> = first
        .last()
        .unwrap()
        .split(',')
        .map(|p| p.split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(runs.len(), 2, "both runs appear: {:?}", first.last());
    // Resuming from the 30th id gives the 31st event next, nothing repeated.
    let again = read_ids(Some(first.last().unwrap()), 1);
    let all = read_ids(None, 31);
    assert_eq!(again[0], all[30]);
}

#[test]
fn runs_start_from_a_registered_repository_and_their_output_can_be_followed() {
    let p = Project::example();
    p.write("broken-plan.md", "no tasks here\n");
    p.commit("a broken plan");
    let s = serve(&p);
    let t = Some(s.token.as_str());
    let root = p.path().canonicalize().unwrap();
    let (code, body) = http(&s, "GET", "/api/repos", t, None);
    assert_eq!(code, 200);
    let repos = json_of(&body)["repos"].clone();
    assert_eq!(repos[0]["path"], json!(root));
    assert!(
        repos[0]["plans"]
            .as_array()
            .unwrap()
            .contains(&json!("PLAN.md"))
    );
    let start = |body: Value| http(&s, "POST", "/api/runs", t, Some(&body.to_string()));
    let workdir = root.display().to_string();
    // Refused, and nothing starts: unknown repository, paths that leave it, a missing
    // plan, option look-alikes, unknown fields, no token.
    for (body, want) in [
        (
            json!({"request_id": "a", "workdir": "/tmp"}),
            "not a repository this machine has runs in",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "plan": "../PLAN.md"}),
            "must be a path inside the repository",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "plan": "/etc/passwd"}),
            "must be a path inside the repository",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "plan": "nope.md"}),
            "no plan `nope.md`",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "agent": "--help"}),
            "not a valid name",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "shell": "sh"}),
            "unknown field",
        ),
        (
            json!({"request_id": "a", "workdir": workdir, "plan": "broken-plan.md"}),
            "the run did not start",
        ),
    ] {
        let (code, text) = start(body.clone());
        assert_eq!(code, 400, "{body}: {text}");
        assert!(text.contains(want), "{body}: {text}");
    }
    assert_eq!(
        http(
            &s,
            "POST",
            "/api/runs",
            None,
            Some(r#"{"request_id":"a","workdir":"/"}"#)
        )
        .0,
        401
    );
    let huge = json!({"request_id": "a", "workdir": workdir, "plan": "x".repeat(70 * 1024)});
    assert_eq!(start(huge).0, 413, "a body over 64 KiB");
    assert_eq!(http(&s, "POST", "/api/runs", t, Some("{not json")).0, 400);
    assert_eq!(
        http(&s, "GET", "/api/runs/nope/iterations/1/output", t, None).0,
        404
    );
    assert!(
        !p.path().join(".agentloop/runs").exists()
            || std::fs::read_dir(p.path().join(".agentloop/runs"))
                .unwrap()
                .count()
                == 0
    );

    // Started: the answer names the run, whose journal exists; the same request again
    // is the same run.
    let (code, body) =
        start(json!({"request_id": "start-1", "workdir": workdir, "plan": "PLAN.md"}));
    assert_eq!(code, 200, "{body}");
    let started = json_of(&body);
    let id = started["run_id"].as_str().unwrap().to_string();
    assert_eq!(started["duplicate"], false);
    assert!(
        p.path()
            .join(".agentloop/runs")
            .join(&id)
            .join("journal.jsonl")
            .exists()
    );
    let (_, again) = start(json!({"request_id": "start-1", "workdir": workdir}));
    assert_eq!(json_of(&again)["run_id"], json!(id));
    assert_eq!(json_of(&again)["duplicate"], true);
    let deadline = Instant::now() + Duration::from_secs(60);
    let state = loop {
        let (_, b) = http(&s, "GET", &format!("/api/runs/{id}"), t, None);
        let v = json_of(&b);
        if v["status"] == "completed" {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "the started run never completed: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(state["tasks_done"], 3);
    assert_eq!(state["gauges"][0]["used"], 4, "four iterations spent");
    assert_eq!(state["gauges"][0]["limit"], 10);
    assert_eq!(
        std::fs::read_dir(p.path().join(".agentloop/runs"))
            .unwrap()
            .count(),
        1
    );

    // The iteration list carries what the timeline needs.
    let (_, b) = http(&s, "GET", &format!("/api/runs/{id}/iterations"), t, None);
    let its = json_of(&b)["iterations"].as_array().unwrap().clone();
    let outcomes: Vec<_> = its
        .iter()
        .map(|i| (i["task"].as_str().unwrap(), i["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("T1", "completed"),
            ("T2", "failed"),
            ("T2", "completed"),
            ("T3", "completed")
        ]
    );
    assert_eq!(its[1]["verified"], false);
    assert!(its.iter().all(|i| i["duration_ms"].is_u64()));

    // A prompt is a view of the journal (not fsynced): one a power cut lost is made
    // again from the records before its iteration, the same text.
    let run_dir = p.path().join(".agentloop/runs").join(&id);
    for n in 1..=4 {
        let file = run_dir.join(format!("iterations/{n:04}/prompt.md"));
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("# "), "{written}");
        let prompt = |t| {
            let (_, b) = http(
                &s,
                "GET",
                &format!("/api/runs/{id}/iterations/{n}"),
                t,
                None,
            );
            json_of(&b)["prompt"].as_str().unwrap().to_string()
        };
        assert_eq!(prompt(t), written);
        std::fs::write(&file, "").unwrap();
        assert_eq!(prompt(t), written, "iteration {n}'s prompt made again");
    }

    // Output from an offset, in pieces that never split a character.
    let out = |q: &str| {
        let (code, b) = http(
            &s,
            "GET",
            &format!("/api/runs/{id}/iterations/1/output{q}"),
            t,
            None,
        );
        (code, json_of(&b))
    };
    let (code, whole) = out("");
    assert_eq!(code, 200);
    assert!(
        whole["text"]
            .as_str()
            .unwrap()
            .contains("Created src/greet.sh")
    );
    let size = whole["size"].as_u64().unwrap();
    assert_eq!(whole["offset"].as_u64(), Some(size));
    let (_, tail) = out("?offset=8");
    assert_eq!(
        tail["text"].as_str().unwrap(),
        &whole["text"].as_str().unwrap()[8..]
    );
    let (_, end) = out(&format!("?offset={}", size + 100));
    assert_eq!(
        (end["text"].as_str(), end["offset"].as_u64()),
        (Some(""), Some(size))
    );
    let (_, verify) = out("?file=verify");
    assert!(
        verify["text"]
            .as_str()
            .unwrap()
            .contains("$ sh tests/test_greet.sh")
    );
    assert_eq!(out("?file=../../journal.jsonl").0, 400);
    assert_eq!(out("?path=x").0, 400);
    assert_eq!(
        http(
            &s,
            "GET",
            &format!("/api/runs/{id}/iterations/9/output"),
            t,
            None
        )
        .0,
        404
    );
}

#[test]
fn the_dashboard_is_served_from_the_binary_with_a_strict_policy() {
    let p = Project::git();
    let s = serve(&p);
    for (path, kind) in [
        ("/", "text/html"),
        ("/assets/api.js", "text/javascript"),
        ("/assets/dom.js", "text/javascript"),
        ("/assets/runs.js", "text/javascript"),
        ("/assets/run.js", "text/javascript"),
        ("/assets/app.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
    ] {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut c, &mut text).unwrap();
        let head = text.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
        assert!(
            head.contains(&format!("content-type: {kind}")),
            "{path}: {head}"
        );
        assert!(
            head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
            "{path}: {head}"
        );
        assert!(
            head.contains("referrer-policy: no-referrer"),
            "{path}: {head}"
        );
    }
    // The page holds no data: everything it shows comes through the API, with the token.
    assert_eq!(http(&s, "GET", "/api/runs", None, None).0, 401);
}

#[test]
fn event_streams_start_where_the_client_says() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let s = serve(&p);
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let (_, state) = http(&s, "GET", &format!("/api/runs/{id}"), Some(&s.token), None);
    let last = json_of(&state)["last_seq"].as_u64().unwrap();
    let first_id = |path: &str| {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut r = BufReader::new(c);
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            if let Some(v) = line.trim().strip_prefix("id:") {
                return Some(v.trim().to_string());
            }
        }
    };
    let tok = &s.token;
    assert_eq!(
        first_id(&format!("/api/runs/{id}/events?after=5&token={tok}")).as_deref(),
        Some("6")
    );
    assert!(last > 10, "{last}");
    assert_eq!(
        first_id(&format!("/api/runs/{id}/events?after={last}&token={tok}")),
        None,
        "nothing after the last event"
    );
    assert_eq!(
        first_id(&format!("/api/events?tail=true&token={tok}")),
        None,
        "tail skips history"
    );
    assert_eq!(
        first_id(&format!("/api/events?after={id}:{}&token={tok}", last - 1)),
        Some(format!("{id}:{last}"))
    );
    let (code, _) = http(
        &s,
        "GET",
        &format!("/api/runs/{id}/events?after=abc"),
        Some(tok),
        None,
    );
    assert_eq!(code, 400);
}

#[test]
fn a_run_whose_directory_was_deleted_is_listed_as_gone() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let first = p.run_dir();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    std::fs::remove_dir_all(&first).unwrap();
    let s = serve(&p);
    let (code, body) = http(&s, "GET", "/api/runs", Some(&s.token), None);
    assert_eq!(code, 200);
    let runs = json_of(&body)["runs"].as_array().unwrap().clone();
    let gone = first.file_name().unwrap().to_string_lossy().into_owned();
    let statuses: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert!(
        statuses.contains(&(gone.clone(), "gone".into())),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().any(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
    // Asked for by id: 410 Gone with what happened, for every route of the run.
    for path in ["", "/iterations", "/plan", "/events"] {
        let (code, body) = http(
            &s,
            "GET",
            &format!("/api/runs/{gone}{path}"),
            Some(&s.token),
            None,
        );
        assert_eq!(code, 410, "{path}: {body}");
        assert!(body.contains("was deleted"), "{body}");
    }
}
