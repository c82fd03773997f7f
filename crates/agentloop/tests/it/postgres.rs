//! The journal in PostgreSQL against a real server (Debian's postgresql, started by
//! `scripts/pg-server` in the target directory and shared by these tests, a database
//! of its own for each test).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{Project, Scratch, wait_exit, wait_for};

/// The shared server's URL (database `agentloop`), the server started first if it
/// does not run.
fn server() -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-server");
    let out = Command::new(script)
        .arg("ensure")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the test server did not start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A fresh database `name` on the server, with agentloop's tables: its URL.
fn database(name: &str) -> String {
    let base = server();
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    admin
        .simple_query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    admin
        .simple_query(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let url = format!("{}/{name}", base.rsplit_once('/').unwrap().0);
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["store", "migrate"])
        .env("AGENTLOOP_STORE_URL", &url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    url
}

fn sql(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// The run's journal file (once read, which copies in what the store has beyond it)
/// and its export from the store are the same, line for line.
fn assert_same_journal(p: &Project, run: &str) {
    let read = p.run(&["status", run, "--json"]);
    assert_eq!(read.code, Some(0), "{}", read.stderr);
    let export = p.run(&["store", "export", run]);
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    let file = p.read(&format!(".agentloop/runs/{run}/journal.jsonl"));
    assert_eq!(export.stdout, file, "the store and the file differ");
}

fn run_id(p: &Project) -> String {
    p.status()["run_id"].as_str().unwrap().to_string()
}

const SIX: &str = "# Six\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n\n## T3: Three\nVerify: test -f three.txt\n\n## T4: Four\nVerify: test -f four.txt\n\n## T5: Five\nVerify: test -f five.txt\n\n## T6: Six\nVerify: test -f six.txt\n";

/// A project of six tasks whose agent sleeps `pause` seconds, then makes its file.
fn six(url: &str, pause: &str) -> Project {
    let mut p = Scratch::new().plan(SIX).build();
    p.write(
        "agent.sh",
        format!(
            "prompt=$(cat)\ntask=$(printf '%s\\n' \"$prompt\" | sed -n 's/^## Your task: \\([A-Za-z0-9_-]*\\) .*/\\1/p' | head -n 1)\necho started\nsleep {pause}\ncase $task in T1) f=one;; T2) f=two;; T3) f=three;; T4) f=four;; T5) f=five;; T6) f=six;; esac\ntouch $f.txt\necho TASK_COMPLETE\n"
        ),
    );
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\n",
            p.path().join("agent.sh").display()
        ),
    );
    p.write(".gitignore", ".agentloop/\n");
    p.commit("six tasks");
    p.env.push(("AGENTLOOP_STORE_URL".into(), url.into()));
    p
}

#[test]
fn a_run_keeps_its_journal_in_postgres_and_its_export_passes_journal_verify() {
    let url = database("al_export");
    let mut p = Project::example();
    p.env.push(("AGENTLOOP_STORE_URL".into(), url.clone()));
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let run = run_id(&p);
    assert_same_journal(&p, &run);
    // One row per record, numbered from 1 without a gap.
    let rows: Vec<i64> = sql(&url)
        .query(
            "SELECT seq FROM agentloop_events WHERE run_id = $1 ORDER BY seq",
            &[&run],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, (1..=rows.len() as i64).collect::<Vec<_>>());
    assert!(rows.len() >= 15);
    let listed = p.run(&["store", "runs"]);
    assert_eq!(listed.stdout.trim(), run);
    // The export, as a file journal somewhere else (with the same key), verifies.
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().join(format!(".agentloop/runs/{run}"));
    std::fs::create_dir_all(&dir).unwrap();
    let export = p.run(&["store", "export", &run]).stdout;
    std::fs::write(dir.join("journal.jsonl"), &export).unwrap();
    let v = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["journal", "verify"])
        .current_dir(elsewhere.path())
        .env("XDG_STATE_HOME", p.state_home())
        .env_remove("AGENTLOOP_STORE_URL")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&v.stderr)
    );
    assert!(
        said.contains(&format!("ok · {} events", rows.len())),
        "{said}"
    );
    // A row edited in the database is caught as not agentloop's.
    sql(&url)
        .execute(
            "UPDATE agentloop_events SET line = replace(line, '\"completed\"', '\"failed\"') WHERE run_id = $1 AND seq = $2",
            &[&run, &(rows.len() as i64)],
        )
        .unwrap();
    let tampered = p.run(&["store", "export", &run]).stdout;
    std::fs::write(dir.join("journal.jsonl"), tampered).unwrap();
    let v = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["journal", "verify"])
        .current_dir(elsewhere.path())
        .env("XDG_STATE_HOME", p.state_home())
        .output()
        .unwrap();
    assert!(!v.status.success());
}

#[test]
fn a_second_driver_for_the_same_run_on_another_machine_is_refused() {
    let url = database("al_race");
    let p = six(&url, "2");
    let mut first = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the first driver at work", |p| {
        crate::support::journal_has(p, "\"iteration_started\"")
    });
    let run = run_id(&p);
    // "Another machine": a copy of the project, with the run as the store has it and
    // the same key, driving the same run.
    let other = tempfile::tempdir().unwrap();
    let copy = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", p.path().display()))
        .arg(other.path())
        .status()
        .unwrap();
    assert!(copy.success());
    std::fs::remove_file(other.path().join(format!(".agentloop/runs/{run}/lock"))).ok();
    let r = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["resume", &run, "--quiet"])
        .current_dir(other.path())
        .env("AGENTLOOP_STORE_URL", &url)
        .env("XDG_STATE_HOME", p.state_home())
        .env("XDG_CONFIG_HOME", other.path().join(".none"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    // The driver holding the run in the store is named: its pid, and where.
    assert!(
        stderr.contains(&format!("run {run} is already driven by pid "))
            && stderr.contains(" on 127.0.0.1"),
        "{stderr}"
    );
    assert_eq!(
        wait_exit(&mut first, Duration::from_secs(90)).code(),
        Some(0)
    );
    assert_same_journal(&p, &run);
    // Now that it is over, the same run can be taken from the other machine.
    let again = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["status", &run, "--json"])
        .current_dir(other.path())
        .env("AGENTLOOP_STORE_URL", &url)
        .env("XDG_STATE_HOME", p.state_home())
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        s["status"], "completed",
        "the copy caught up from the store"
    );
}

#[test]
fn two_drivers_racing_for_one_run_one_drives_it() {
    let url = database("al_two");
    let p = six(&url, "0.2");
    // A run whose driver died at once: two drivers then take it up together.
    let mut first = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the run made", |p| {
        crate::support::journal_has(p, "\"iteration_started\"")
    });
    first.kill().unwrap();
    first.wait().unwrap();
    let run = run_id(&p);
    let other = tempfile::tempdir().unwrap();
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", p.path().display()))
            .arg(other.path())
            .status()
            .unwrap()
            .success()
    );
    let start = |dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(["resume", &run, "--quiet"])
            .current_dir(dir)
            .env("AGENTLOOP_STORE_URL", &url)
            .env("XDG_STATE_HOME", p.state_home())
            .env("XDG_CONFIG_HOME", dir.join(".none"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = start(p.path());
    let b = start(other.path());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let codes = [a.status.code(), b.status.code()];
    assert!(
        codes.contains(&Some(0)) && codes.contains(&Some(2)),
        "{codes:?}\n{}\n{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    let loser = if a.status.code() == Some(2) { &a } else { &b };
    let said = String::from_utf8_lossy(&loser.stderr);
    assert!(
        said.contains("driven elsewhere: another driver holds it")
            || said.contains("is already driven by pid "),
        "{said}"
    );
    // One journal, no record twice: every task done once.
    let export = p.run(&["store", "export", &run]).stdout;
    let starts = export.matches("\"iteration_started\"").count();
    let done = export.matches("\"outcome\":\"completed\"").count();
    assert_eq!(done, 6, "{export}");
    // The six, and the one the dead driver left open.
    assert_eq!(starts, 7, "{export}");
}

#[test]
fn a_killed_driver_is_resumed_from_the_store() {
    let url = database("al_killed");
    let p = six(&url, "0.5");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "two tasks done", |p| {
        p.run(&["status", "--json"])
            .stdout
            .matches("\"done\"")
            .count()
            >= 2
    });
    driver.kill().unwrap();
    driver.wait().unwrap();
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    assert_same_journal(&p, &run_id(&p));
}

#[test]
fn connections_dropped_mid_run_lose_and_repeat_nothing() {
    let url = database("al_drops");
    let p = six(&url, "0.3");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    // An administrator (or a failover) ends every agentloop session, again and again
    // (this test's database only: the other tests share the server).
    let mut admin = sql(&url);
    let mut dropped = 0u64;
    while driver.try_wait().unwrap().is_none() {
        let n: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'agentloop %' AND datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        dropped += n as u64;
        std::thread::sleep(Duration::from_millis(150));
    }
    let st = driver.wait().unwrap();
    assert_eq!(st.code(), Some(0), "the driver: {:?}", st.signal());
    assert!(dropped >= 5, "only {dropped} sessions were ended");
    let run = run_id(&p);
    assert_eq!(p.status()["status"], "completed");
    assert_same_journal(&p, &run);
    let v = p.run(&["journal", "verify"]);
    assert_eq!(v.code, Some(0), "{}", v.stderr);
    let export = p.run(&["store", "export", &run]).stdout;
    assert_eq!(export.matches("\"outcome\":\"completed\"").count(), 6);
}

#[test]
fn sigkill_at_every_journal_append_with_the_journal_in_postgres() {
    let url = database("al_chaos");
    let reference = Project::example();
    let r = reference.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let want = crate::crash::end(&reference);
    let events = crate::crash::records(&reference).len() as u64;
    // Before the store's row, between the row and the file's line, after both: each
    // record once, at one of the three in turn (every record at every point is the
    // file journal's test, `crash::sigkill_at_every_journal_append_then_resume`; what
    // is the store's own is the row without its line, which the turn reaches at every
    // third record).
    const POINTS: [&str; 3] = ["before-append", "after-store-append", "after-append"];
    let mut hit = [0; 3];
    for seq in 2..=events {
        let at = (seq % 3) as usize;
        let point = POINTS[at];
        let mut p = Project::example();
        p.env.push(("AGENTLOOP_STORE_URL".into(), url.clone()));
        let out = p.run_failing_at(&["run", "--quiet"], &format!("{point}:{seq}"));
        if out.status.signal() != Some(9) {
            assert_eq!(out.status.code(), Some(0), "{point}:{seq}");
            continue;
        }
        hit[at] += 1;
        if p.status()["status"] != "completed" {
            let r = p.run(&["resume", "--quiet"]);
            assert_eq!(r.code, Some(0), "{point}:{seq} resume: {}", r.stderr);
        }
        assert_eq!(crate::crash::end(&p), want, "{point}:{seq}");
        let done = crate::crash::completions(&p);
        assert!(done.values().all(|&n| n == 1), "{point}:{seq}: {done:?}");
        assert_eq!(done.len(), 3, "{point}:{seq}: {done:?}");
        assert_same_journal(&p, &run_id(&p));
        assert_eq!(p.run(&["journal", "verify"]).code, Some(0), "{point}:{seq}");
    }
    assert!(
        hit.iter().all(|&n| n >= 8),
        "kill points hit, by point: {hit:?}"
    );
}

#[test]
fn a_store_that_cannot_be_used_is_a_clear_error_and_changes_nothing() {
    let url = server();
    let fresh = database("al_unmigrated");
    sql(&fresh)
        .batch_execute("DROP TABLE agentloop_events, agentloop_runs, agentloop_schema")
        .unwrap();
    for (store, says) in [
        (fresh.as_str(), "run `agentloop store migrate`"),
        (
            "postgres://agentloop@127.0.0.1:1/agentloop",
            "cannot reach PostgreSQL at postgres://agentloop@127.0.0.1:1/agentloop",
        ),
        (
            "postgres://x:y@[bad",
            "AGENTLOOP_STORE_URL: invalid connection string: invalid value for option `host`",
        ),
    ] {
        let mut p = Project::example();
        p.env.push(("AGENTLOOP_STORE_URL".into(), store.into()));
        let r = p.run(&["run", "--quiet"]);
        assert_ne!(r.code, Some(0), "{store}");
        assert!(r.stderr.contains(says), "{store}: {}", r.stderr);
        assert!(!r.stderr.contains(":y@"), "a password shown: {}", r.stderr);
        let runs = std::fs::read_dir(p.path().join(".agentloop/runs"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(runs, 0, "{store}: a run was left behind");
    }
    // A database the server does not have is the URL's to mend (exit 2), not a
    // service down (exit 7).
    let missing = format!("{}/al_not_there", url.rsplit_once('/').unwrap().0);
    let mut p = Project::example();
    p.env.push(("AGENTLOOP_STORE_URL".into(), missing));
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("database \"al_not_there\" does not exist (3D000)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_dashboard_on_another_machine_follows_the_run_through_the_store() {
    use crate::support::{http_request, serve};
    let url = database("al_serve");
    let w1 = six(&url, "0.4");
    let mut driver = w1.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&w1, "the run made", |p| {
        crate::support::journal_has(p, "\"iteration_started\"")
    });
    let run = run_id(&w1);
    // "Another machine": a project directory and state directory of its own, with the
    // journals' key copied over (as a team does for the machines of one run).
    let mut w2 = Project::git();
    w2.env.push(("AGENTLOOP_STORE_URL".into(), url.clone()));
    let state = w2.state_home().join("agentloop");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::copy(
        w1.state_home().join("agentloop/journal.key"),
        state.join("journal.key"),
    )
    .unwrap();
    let s = serve(&w2);
    let get = |path: &str| http_request(&s.addr, "GET", path, Some(s.token.trim()), None);
    wait_for(&w2, "the run listed by the other machine's server", |_| {
        get("/api/runs").1.contains(&run)
    });
    // Its state follows the driver's as the store notifies, to the end.
    let mut seen_running = false;
    let finished = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = get(&format!("/api/runs/{run}"));
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if v["status"] == "running" {
            seen_running = true;
        }
        if v["status"] == "completed" {
            let done = v["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["status"] == "done")
                .count();
            assert_eq!(done, 6, "{body}");
            break;
        }
        assert!(std::time::Instant::now() < finished, "{body}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(seen_running, "the run was seen only once over");
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
    // The copy there is the journal, line for line.
    let copy = std::fs::read_to_string(
        w2.path()
            .join(format!(".agentloop/runs/{run}/journal.jsonl")),
    )
    .unwrap();
    assert_eq!(
        copy,
        w1.read(&format!(".agentloop/runs/{run}/journal.jsonl"))
    );
}

/// The key of a run's driver lock, as agentloop-store makes it (FNV-1a of
/// `driver\0RUN`, shifted to 63 bits).
fn driver_key(run: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "driver".bytes().chain([0]).chain(run.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h >> 1) as i64
}

#[test]
fn a_driver_whose_run_was_taken_while_its_connection_was_down_stops() {
    let url = database("al_taken");
    let p = six(&url, "1");
    let driver = p
        .cmd(&["run", "--quiet"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the driver at work", |p| {
        crate::support::journal_has(p, "\"iteration_started\"")
    });
    let run = run_id(&p);
    // The driver's lock session ends, and another driver takes the run before the
    // driver's watch has taken it back.
    let mut other = sql(&url);
    let mut admin = sql(&url);
    let key = driver_key(&run);
    let t = std::time::Instant::now();
    loop {
        admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1 AND datname = current_database()",
                &[&format!("agentloop driver {run} %")],
            )
            .unwrap();
        let took: bool = other
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .unwrap()
            .get(0);
        if took {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the lock was never free"
        );
    }
    let out = driver.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("another driver took the run meanwhile")
            && stderr.contains("this driver stops"),
        "{stderr}"
    );
    // What it wrote is whole: the store and the file agree, and the journal verifies.
    drop(other);
    assert_same_journal(&p, &run);
    assert_eq!(p.run(&["journal", "verify"]).code, Some(0));
}

#[test]
fn watch_on_another_machine_follows_the_run_through_the_store() {
    use std::io::Write;
    let url = database("al_watch");
    let w1 = six(&url, "0.3");
    let mut driver = w1.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&w1, "the run made", |p| {
        crate::support::journal_has(p, "\"iteration_started\"")
    });
    let run = run_id(&w1);
    let w2 = Project::git();
    let state = w2.state_home().join("agentloop");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::copy(
        w1.state_home().join("agentloop/journal.key"),
        state.join("journal.key"),
    )
    .unwrap();
    // `watch` in a pseudo-terminal there, on a run it has never seen.
    let screen = w2.path().join(".git/screen");
    let mut child = Command::new("script")
        .args(["-q", "-f", "-e", "-c"])
        .arg(format!(
            "stty cols 100 rows 30; exec '{}' watch {run}",
            env!("CARGO_BIN_EXE_agentloop")
        ))
        .arg(&screen)
        .current_dir(w2.path())
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", w2.state_home())
        .env("AGENTLOOP_STORE_URL", &url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let shown = |what: &str| std::fs::read_to_string(&screen).is_ok_and(|s| s.contains(what));
    // (The terminal gets words apart, with the cursor moved between them.)
    wait_for(&w2, "watch drawing the run", |_| shown(&run));
    wait_for(&w2, "watch showing the run completed", |_| {
        shown("6/6") && shown("completed")
    });
    child.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(10)).code(),
        Some(0)
    );
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
}

/// A TCP proxy in front of the test server whose traffic can be frozen — the
/// connections stay open and nothing passes, as with a server that is stopped (`kill
/// -STOP`) or a network that drops everything — or ended for good.
struct Freezer {
    port: u16,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
    gone: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Freezer {
    fn start(upstream: u16) -> Freezer {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(false));
        let gone = Arc::new(AtomicBool::new(false));
        let (f, g) = (frozen.clone(), gone.clone());
        std::thread::spawn(move || {
            loop {
                if g.load(Ordering::SeqCst) {
                    return;
                }
                match listener.accept() {
                    Ok((client, _)) if !f.load(Ordering::SeqCst) => {
                        let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream))
                        else {
                            continue;
                        };
                        for (from, to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            let (f, g) = (f.clone(), g.clone());
                            std::thread::spawn(move || pipe(from, to, &f, &g));
                        }
                    }
                    // Frozen: the connection is taken and nothing ever answers.
                    Ok((client, _)) => {
                        let g = g.clone();
                        std::thread::spawn(move || {
                            while !g.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(50));
                            }
                            drop(client);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Freezer { port, frozen, gone }
    }

    fn set_frozen(&self, on: bool) {
        self.frozen.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    fn end(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// `url` (the test server's), through the proxy.
    fn url(&self, url: &str) -> String {
        let (head, tail) = url.rsplit_once(':').unwrap();
        let db = tail.split_once('/').unwrap().1;
        format!("{head}:{}/{db}", self.port)
    }
}

fn pipe(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    frozen: &std::sync::atomic::AtomicBool,
    gone: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    from.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if gone.load(Ordering::SeqCst) {
            let _ = from.shutdown(std::net::Shutdown::Both);
            let _ = to.shutdown(std::net::Shutdown::Both);
            return;
        }
        if frozen.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(std::net::Shutdown::Write);
                return;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// The store frozen, then gone: reading commands answer from this machine's copy with
/// a warning, in seconds; a driver stops with exit 7 ("a service the run needs
/// failed") within `[store] timeout` and says why; once the store is back, `resume`
/// finishes the run and the store and the file agree.
#[test]
fn a_frozen_or_gone_store_is_waited_for_only_so_long() {
    let url = database("al_frozen");
    let port: u16 = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split_once('/')
        .unwrap()
        .0
        .parse()
        .unwrap();
    let proxy = Freezer::start(port);
    let mut p = six(&proxy.url(&url), "0.3");
    let config = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        format!("{config}\n[store]\ntimeout = \"3s\"\n"),
    );
    p.commit("a short store timeout");
    p.env.retain(|(k, _)| k != "AGENTLOOP_STORE_URL");
    p.env.push(("AGENTLOOP_STORE_URL".into(), proxy.url(&url)));
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "a task done", |p| {
        p.run(&["status", "--json"]).stdout.contains("\"done\"")
    });
    proxy.set_frozen(true);
    let t = std::time::Instant::now();
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(
        st.code(),
        Some(7),
        "the driver's exit after the store froze"
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    // Reading commands: this machine's copy, with a warning, in seconds.
    for args in [vec!["status"], vec!["journal", "verify"]] {
        let t = std::time::Instant::now();
        let r = p.run(&args);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("store cannot be read") && r.stderr.contains("did not answer"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{args:?}: {:?}",
            t.elapsed()
        );
    }
    // The store's own commands wait `[store] timeout` too, then say so (exit 7).
    let t = std::time::Instant::now();
    let r = p.run(&["store", "runs"]);
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(
        r.stderr.contains("did not answer within 3 s"),
        "{}",
        r.stderr
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // `serve` (as `watch`) does not wait for it for ever: it says so and serves this
    // machine's copies.
    {
        use std::io::BufRead;
        let t = std::time::Instant::now();
        let mut serve = p
            .cmd(&["serve", "--port", "0"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let err = std::io::BufReader::new(serve.stderr.take().unwrap());
        let mut said = String::new();
        for line in err.lines() {
            let line = line.unwrap();
            said.push_str(&line);
            said.push('\n');
            if line.contains("listening on") {
                break;
            }
        }
        let _ = serve.kill();
        let _ = serve.wait();
        assert!(said.contains("listening on"), "{said}");
        assert!(
            said.contains("showing this machine's copies of its runs"),
            "{said}"
        );
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    }
    // A resume while it is frozen starts nothing and says why, having waited for
    // the store once, not once for each of its steps (17 s with a 3 s timeout, before).
    let t = std::time::Instant::now();
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(r.stderr.contains("did not answer"), "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    // Back: the run finishes where it was — once the server has seen the sessions of
    // the driver that stopped end (their bytes were held in the proxy while it was
    // frozen; with them go its driver lock and the lock of the append it was making).
    proxy.set_frozen(false);
    let mut db = sql(&url);
    let t = std::time::Instant::now();
    let held = |db: &mut postgres::Client| -> i64 {
        db.query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .unwrap()
        .get(0)
    };
    while held(&mut db) > 0 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = p.run(&["resume", "--quiet"]);
    if r.code != Some(0) {
        let sessions: Vec<String> = db
            .query(
                "SELECT coalesce(application_name, '') || ' ' || coalesce(state, '') || ' ' || coalesce(wait_event, '') || ': ' || left(coalesce(query, ''), 80) FROM pg_stat_activity WHERE datname = current_database()",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        panic!(
            "resume after the thaw: {:?}\n{}\nsessions: {sessions:#?}",
            r.code, r.stderr
        );
    }
    let run = run_id(&p);
    assert_same_journal(&p, &run);
    // Gone for good: reading still works, from the copy.
    proxy.end();
    let r = p.run(&["status"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("completed"), "{}", r.stdout);
    assert!(r.stderr.contains("store cannot be read"), "{}", r.stderr);
}
