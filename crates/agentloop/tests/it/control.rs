//! Control from another process while a real driver runs: stop, stop --now, pause and
//! resume, gates, blocked tasks, breakers, budgets, replans, locks and killed drivers.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::{Scratch, agent, alive, journal_has, scripted, started, wait_exit, wait_for};

const TWO_TASKS: &str = "# Two\n\n## T1: First\nVerify: test -f one.txt\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";

#[test]
fn stop_now_kills_the_agent_group_and_the_run_is_stopped() {
    // The agent starts a grandchild too; both must die.
    let p = scripted(
        TWO_TASKS,
        "sleep 60 &\necho $! > .git/agent-state/grandchild\nsleep 60\n",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the agent to start", |p| {
        p.path().join(".git/agent-state/grandchild").exists()
    });
    let pid = p.read(".git/agent-state/pid");
    let grandchild = p.read(".git/agent-state/grandchild");
    let t = Instant::now();
    let r = p.run(&["stop", "--now"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(15));
    assert_eq!(st.code(), Some(6), "a stopped run exits 6");
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "stop --now took {:?}",
        t.elapsed()
    );
    assert!(
        !alive(&pid) && !alive(&grandchild),
        "the agent's process group is gone"
    );
    let s = p.status();
    assert_eq!(s["status"], "stopped");
    assert_eq!(s["tasks"][0]["status"], "pending");
}

#[test]
fn stop_waits_for_the_current_iteration() {
    let p = scripted(
        TWO_TASKS,
        "sleep 1\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    assert_eq!(p.run(&["stop"]).code, Some(0));
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(6));
    let s = p.status();
    assert_eq!(s["status"], "stopped");
    // The iteration in flight was finished and verified, not thrown away.
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["tasks"][1]["status"], "pending");
    // A stopped run can be resumed to the end.
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn pause_then_resume_from_another_process() {
    let p = scripted(
        TWO_TASKS,
        "sleep 0.5\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    assert_eq!(p.run(&["pause"]).code, Some(0));
    wait_for(&p, "the run to pause", |p| p.status()["status"] == "paused");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        p.status()["iterations"],
        1,
        "no iteration starts while paused"
    );
    let second = p.run(&["pause"]);
    assert!(
        second.stderr.contains("already paused"),
        "{}",
        second.stderr
    );
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("resume requested"), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn a_second_driver_is_refused_with_the_holders_pid() {
    let p = scripted(
        TWO_TASKS,
        "sleep 2\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("is already driven by pid {}", driver.id())),
        "{}",
        r.stderr
    );
    let _ = p.run(&["stop", "--now"]);
    wait_exit(&mut driver, Duration::from_secs(15));
}

#[test]
fn a_killed_driver_is_taken_over_and_the_run_completes() {
    let p = scripted(TWO_TASKS, "sleep 30\n");
    let mut driver = started(&p);
    let agent_pid = p.read(".git/agent-state/pid");
    driver.kill().unwrap();
    driver.wait().unwrap();
    wait_for(&p, "the orphaned agent to die", |_| !alive(&agent_pid));
    // Now a working agent: the resumed run aborts the dead iteration and redoes it.
    p.write(
        "agent.sh",
        agent("touch one.txt two.txt\necho TASK_COMPLETE\n"),
    );
    p.commit("fix agent");
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("is gone; taking over"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("Aborted · the iteration was interrupted before the agent finished"),
        "{log}"
    );
}

#[test]
fn sigint_exits_130_and_resume_finishes() {
    let p = scripted(TWO_TASKS, "trap 'exit 130' INT\nsleep 30 & wait\n");
    let mut driver = started(&p);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(130), "signal {:?}", st.signal());
    assert_eq!(
        p.status()["status"],
        "running",
        "an interrupted run is not finished"
    );
    p.write(
        "agent.sh",
        agent("touch one.txt two.txt\necho TASK_COMPLETE\n"),
    );
    p.commit("fix agent");
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn gate_after_a_task_waits_for_approval() {
    let plan = "# Gate\n\n## T1: First\nVerify: test -f one.txt\nGate: after\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";
    let p = scripted(plan, "touch one.txt two.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(
        r.code,
        Some(5),
        "waiting for a person exits 5: {}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "waiting");
    assert_eq!(s["needs_attention"], true);
    assert_eq!(s["gate"]["point"], "after_task");
    // Interactive: the driver waits, a person approves from elsewhere, it goes on.
    let mut driver = p.cmd(&["resume", "--quiet"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        driver.try_wait().unwrap().is_none(),
        "the driver waits at the gate"
    );
    let a = p.run(&["approve", "--note", "looks good"]);
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
    assert!(journal_has(
        &p,
        "\"action\":\"approve\",\"note\":\"looks good\""
    ));
}

#[test]
fn approve_without_a_gate_is_refused() {
    let p = Scratch::new()
        .plan(TWO_TASKS)
        .agent(&agent("touch one.txt two.txt\necho TASK_COMPLETE\n"))
        .config("[gates]\nfinal_review = true\n")
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let r = p.run(&["reject"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("a rejection needs a reason"),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["approve"]).code, Some(0));
    assert_eq!(
        p.status()["status"],
        "running",
        "approve without a driver only records; resume drives"
    );
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert_eq!(p.status()["status"], "completed");
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("is completed"), "{}", r.stderr);
}

#[test]
fn blocked_question_waits_then_retry_with_a_note() {
    let body = r#"case "$task$prompt" in
T2*) touch two.txt; echo TASK_COMPLETE ;;
*"Use sqlite"*) touch one.txt; echo TASK_COMPLETE ;;
*) echo "BLOCKED: Which database should I use?" ;;
esac
"#;
    let p = scripted(TWO_TASKS, body);
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    assert_eq!(
        s["tasks"][0]["blocked"],
        "the agent asks: Which database should I use?"
    );
    assert_eq!(p.run(&["steer", "Use sqlite"]).code, Some(0));
    assert_eq!(p.run(&["retry", "T1"]).code, Some(0));
    let r = p.run(&["resume", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn a_stuck_agent_trips_the_breaker_and_blocks() {
    // Never changes anything, never claims completion.
    let p = Scratch::new()
        .plan(TWO_TASKS)
        .agent(&agent("echo 'still thinking'\n"))
        .config("[budgets]\nmax_replans = 0\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(4), "a breaker exits 4: {}", r.stderr);
    assert!(
        r.stderr
            .contains("no change in the working tree for 3 iterations; next: block it"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    assert_eq!(s["iterations"], 3, "stopped after three wasted iterations");
}

#[test]
fn a_spent_budget_pauses_the_run_and_a_top_up_goes_on() {
    let p = scripted(
        TWO_TASKS,
        "echo \"try $n\" > attempt.txt\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait", "--quiet", "--max-iterations", "2"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        s["status"], "paused",
        "a budget pauses, it does not end the run"
    );
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["budget_spent"], "budget spent: iterations 2 of 2");
    assert!(s["finished"].is_null());
    // Bad amounts change nothing.
    let r = p.run(&["resume", "--iterations", "+0"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["resume", "--budget", "lots"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(p.status()["iterations"], 2);
    // A top-up is journaled and the run goes on from where it paused.
    let r = p.run(&["resume", "--iterations", "+1", "--quiet"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["iterations"], 3);
    assert_eq!(s["budget_spent"], "budget spent: iterations 3 of 3");
    assert!(
        p.run(&["log"])
            .stdout
            .contains("budgets topped up: +1 iteration (from cli)"),
        "{}",
        p.run(&["log"]).stdout
    );
}

#[test]
fn replan_splits_a_task_and_keeps_its_checks() {
    let plan = "# Replan\n\n## T1: Everything at once\nVerify: test -f a.txt && test -f b.txt\n";
    let body = r#"case "$task" in
T1) printf 'This is two tasks.\nREPLAN\n## T1a: Part A\nVerify: test -f a.txt\n\n## T1b: Part B\nDepends: T1a\n' ;;
T1a) touch a.txt; echo TASK_COMPLETE ;;
T1b) touch b.txt; echo TASK_COMPLETE ;;
esac
"#;
    let p = scripted(plan, body);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("replan accepted (plan v2): T1 → T1a, T1b"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["plan"]["version"], 2);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["T1a", "T1b"]);
    let v2 = std::fs::read_to_string(p.run_dir().join("plan/v2.md")).unwrap();
    assert!(
        v2.contains("## T1b: Part B\n\nDepends: T1a\nVerify: test -f a.txt && test -f b.txt"),
        "{v2}"
    );
}

#[test]
fn tdd_mode_requires_a_test_change() {
    let plan = "# TDD\n\n## T1: Feature\nVerify: test -f feature.txt\n";
    let body = r#"touch feature.txt
if [ "$n" -ge 2 ]; then mkdir -p tests; echo ok > tests/feature_test.sh; fi
echo TASK_COMPLETE
"#;
    let p = scripted(plan, body);
    let r = p.run(&["run", "--mode", "tdd", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("tdd mode: verification passes but no test file was changed"),
        "{log}"
    );
    assert_eq!(p.status()["tasks"][0]["iterations"], 2);
}

#[test]
fn log_follow_prints_events_until_the_run_ends() {
    let p = scripted(
        TWO_TASKS,
        "sleep 0.3\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the run to start", |p| {
        p.path().join(".git/agent-state/pid").exists()
    });
    let follow = p
        .cmd(&["log", "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(20)).code(),
        Some(0)
    );
    let out = follow.wait_with_output().unwrap();
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["event"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_created"));
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run_finished"),
        "--follow ends with the run"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "iteration_finished").count(),
        2
    );
}

#[test]
fn secrets_are_redacted_from_logs_and_the_journal() {
    let plan = "# S\n\n## T1: Leak\nVerify: echo \"verify sees $MY_API_KEY\"; test -f one.txt\n";
    let p = Scratch::new().plan(plan).agent(&agent(
            "echo \"my key is $MY_API_KEY\"\nif [ \"$n\" -ge 2 ]; then touch one.txt; fi\necho TASK_COMPLETE\n",
        )).config("[agents.scripted.env]\nMY_API_KEY = \"sk-live-0123456789abcdef\"\n").build();
    // The driver's own environment has the key too, so verification sees it.
    let r: crate::support::Run = p
        .cmd(&["run", "--quiet"])
        .env("MY_API_KEY", "sk-live-0123456789abcdef")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut leaked = Vec::new();
    for (path, bytes) in p.tree() {
        if path.starts_with(".agentloop/")
            && String::from_utf8_lossy(&bytes).contains("sk-live-0123456789abcdef")
        {
            leaked.push(path);
        }
    }
    assert!(leaked.is_empty(), "the secret is on disk in {leaked:?}");
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    assert!(log.contains("my key is [REDACTED:MY_API_KEY]"), "{log}");
    let verify = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        verify.contains("verify sees [REDACTED:MY_API_KEY]"),
        "{verify}"
    );
}

#[test]
fn agents_get_an_allow_listed_environment() {
    let p = Scratch::new()
        .plan("# E\n\n## T1: Env\nVerify: test -f one.txt\n")
        .agent(&agent(
            "env | sort > .git/agent-state/env\ntouch one.txt\necho TASK_COMPLETE\n",
        ))
        .config("[agents.scripted.env]\nGIVEN = \"yes\"\n")
        .build();
    let r: crate::support::Run = p
        .cmd(&["run", "--quiet"])
        .env("UNRELATED_SETTING", "should-not-pass")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let env = p.read(".git/agent-state/env");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(
        env.contains("LC_ALL=C") && env.contains("GIVEN=yes"),
        "{env}"
    );
    assert!(!env.contains("UNRELATED_SETTING"), "{env}");
    // pass_env lets more through.
    p.write(
        "agentloop.toml",
        format!(
            "{}pass_env = [\"UNRELATED_*\"]\n",
            p.read("agentloop.toml")
                .replace("[agents.scripted.env]\nGIVEN = \"yes\"\n", "")
        ),
    );
    p.commit("pass more");
    let r: crate::support::Run = p
        .cmd(&["run", "--quiet"])
        .env("UNRELATED_SETTING", "passes")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        p.read(".git/agent-state/env")
            .contains("UNRELATED_SETTING=passes")
    );
}

#[test]
fn notifications_reach_a_webhook_and_a_command() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        listener.set_nonblocking(false).unwrap();
        for stream in listener.incoming().take(2) {
            let mut s = stream.unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            s.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            bodies.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
        bodies
    });

    let plan = "# N\n\n## T1: First\nVerify: test -f one.txt\nGate: after\n";
    let config = format!(
        "[notify]\nwebhook = \"http://127.0.0.1:{port}/hook\"\ncommand = [\"sh\", \"-c\", \"cat >> .git/notified\"]\n"
    );
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&config)
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    assert_eq!(p.run(&["approve"]).code, Some(0));
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    let bodies = received.join().unwrap();
    let events: Vec<&str> = bodies
        .iter()
        .map(|b| b["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["waiting", "completed"]);
    assert_eq!(
        bodies[0]["message"],
        "waiting for a person: review task T1 now that it is verified"
    );
    // The end says the verdict.
    assert!(
        bodies[1]["message"]
            .as_str()
            .unwrap()
            .contains("· verdict "),
        "{}",
        bodies[1]
    );
    assert!(bodies[1]["verdict"].is_string(), "{}", bodies[1]);
    let by_command = p.read(".git/notified");
    assert_eq!(by_command.matches("\"event\":").count(), 2, "{by_command}");
}

/// A CA and a certificate for 127.0.0.1 signed by it, made with the openssl CLI:
/// `(ca.pem, leaf.pem, leaf.key)` in `dir`.
fn tls_certificates(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (the CLI) is needed to make test certificates");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=agentloop test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("leaf.pem"),
        dir.join("leaf.key"),
    )
}

#[test]
fn an_https_webhook_gets_the_notification_from_a_private_ca() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{BufRead, BufReader, Read, Write};
    let certs = tempfile::tempdir().unwrap();
    let (ca, leaf, key) = tls_certificates(certs.path());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&leaf)
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(&key).unwrap();
    let tls_config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap(),
    );
    // One HTTPS request: its head and JSON body, or why the TLS session failed.
    let serve_once = |config: std::sync::Arc<rustls::ServerConfig>| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || -> Result<(String, serde_json::Value), String> {
            let (tcp, _) = listener.accept().unwrap();
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut r = BufReader::new(&mut tls);
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).map_err(|e| e.to_string())?;
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).map_err(|e| e.to_string())?;
            tls.write_all(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .map_err(|e| e.to_string())?;
            tls.conn.send_close_notify();
            let _ = tls.flush();
            Ok((head, serde_json::from_slice(&body).unwrap()))
        });
        (port, handle)
    };
    let (port, received) = serve_once(tls_config.clone());

    let plan = "# N\n\n## T1: First\nVerify: test -f one.txt\n";
    let config = format!(
        "[notify]\nwebhook = \"https://127.0.0.1:{port}/hook\"\nwebhook_ca = \"{}\"\n",
        ca.display()
    );
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&config)
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (head, body) = received.join().unwrap().unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    assert_eq!(body["event"], "completed");
    assert!(!r.stderr.contains("webhook"), "{}", r.stderr);

    // Without `webhook_ca` the public roots are trusted, and they do not vouch for a
    // private CA: the client refuses the certificate, says so, and the run is
    // unaffected.

    let (port, refused) = serve_once(tls_config);
    let q = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&format!(
            "[notify]\nwebhook = \"https://127.0.0.1:{port}/hook\"\n"
        ))
        .build();
    let r = q.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(refused.join().unwrap().is_err(), "no request got through");
    assert!(
        r.stderr.contains("webhook https://127.0.0.1")
            && r.stderr.to_lowercase().contains("certificate"),
        "{}",
        r.stderr
    );
}

#[test]
fn step_mode_takes_one_decision_at_a_time() {
    let p = scripted(
        TWO_TASKS,
        "case $task in T1) touch one.txt ;; T2) touch two.txt ;; esac\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--step", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("agentloop: did iteration 1: task"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("agentloop: next: verify iteration 1"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(
        (s["iterations"].as_u64(), s["tasks"][0]["status"].as_str()),
        (Some(1), Some("running"))
    );
    let r = p.run(&["next", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("did verify iteration 1"), "{}", r.stderr);
    assert!(r.stderr.contains("next: iteration 2: task"), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    // Three more steps finish the plan (the last validates the whole project); then
    // there is nothing to do.
    assert_eq!(p.run(&["next", "--quiet"]).code, Some(0));
    let r = p.run(&["next", "--quiet"]);
    assert!(r.stderr.contains("did verify iteration 2"), "{}", r.stderr);
    assert!(
        r.stderr.contains("next: validate the whole project"),
        "{}",
        r.stderr
    );
    let r = p.run(&["next", "--quiet"]);
    assert!(
        r.stderr.contains("did validate the whole project"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("next: nothing: the run is completed"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn every_prompt_names_the_projects_own_instructions() {
    let p = crate::support::Scratch::new()
        .plan("# C\n\n## T1: One\nVerify: test -f one.txt\n")
        .agent(&crate::support::agent(
            "touch one.txt\necho TASK_COMPLETE\n",
        ))
        .file("AGENTS.md", "Use tabs.\n")
        .file("docs/STYLE.md", "Short names.\n")
        .config("[prompt]\ncontext = [\"docs/STYLE.md\", \"docs/GONE.md\"]\n")
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(
        prompt.contains("Read first, before you change anything: `AGENTS.md`, `docs/STYLE.md` (the project's own instructions)."),
        "{prompt}"
    );
    assert!(
        !prompt.contains("GONE"),
        "a file that is not there is not named"
    );
}
