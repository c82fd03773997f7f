//! A hook-mode run's resident (`exec::resident`): the Stop hooks after the first ask
//! it for the clean copy and the surface, which it keeps between hook processes; what
//! is not agentloop's own resident is never asked, and one that is gone is replaced.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hook_mode::{recorded, start};
use crate::support::{Project, Scratch, hook, wait_for};

const PLAN: &str = "# Four\n\n## T1: A\nVerify: test -f a.txt\n\n## T2: B\nDepends: T1\nVerify: test -f b.txt\n\n## T3: C\nDepends: T2\nVerify: test -f c.txt && sh tests/t.sh\n\n## T4: D\nDepends: T3\nVerify: test -f d.txt\n";

/// A hook-mode run of PLAN, whose T3 runs a test script of the project's.
fn project() -> Project {
    start(
        Scratch::new()
            .plan(PLAN)
            .file("tests/t.sh", "test \"$(cat c.txt)\" = c\n"),
    )
}

fn stop(p: &Project, claim: bool) -> Value {
    let name = if claim {
        "stop-hook-input-active.json"
    } else {
        "stop-hook-input.json"
    };
    let (code, out, err) = hook(p, "stop", &recorded(p, name));
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"))
}

fn asks_for(v: &Value, task: &str) -> bool {
    v["reason"]
        .as_str()
        .is_some_and(|r| r.contains(&format!("## Your task: {task}")))
}

fn socket(p: &Project) -> PathBuf {
    p.run_dir().join("resident.sock")
}

fn log(p: &Project) -> String {
    std::fs::read_to_string(p.run_dir().join("resident.log")).unwrap_or_default()
}

/// The pid of the process listening on the run's socket (its only connection's
/// other end, as the kernel says).
fn resident_pid(p: &Project) -> Option<i32> {
    let s = std::os::unix::net::UnixStream::connect(socket(p)).ok()?;
    let creds =
        nix::sys::socket::getsockopt(&s, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    Some(creds.pid())
}

fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
}

/// The project with T1 done: the first check started the resident (that hook verified
/// the full way itself); its pid.
fn at_t2() -> (Project, i32) {
    let p = project();
    assert!(asks_for(&stop(&p, false), "T1"));
    p.write("a.txt", "a");
    let v = stop(&p, true);
    assert!(asks_for(&v, "T2"), "{v}");
    wait_for(&p, "the resident's socket", |p| socket(p).exists());
    let pid = resident_pid(&p).expect("a resident listens");
    (p, pid)
}

#[test]
fn later_stops_ask_the_resident_which_keeps_the_copy_and_ends_with_the_run() {
    let (p, pid) = at_t2();
    p.write("b.txt", "b");
    assert!(asks_for(&stop(&p, true), "T3"));
    assert!(log(&p).contains("copy: refreshed by git"), "{}", log(&p));
    // T3's claim is false (c.txt says x): the copy the resident keeps has it as it is.
    p.write("c.txt", "x");
    let v = stop(&p, true);
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("Last attempt failed"),
        "{v}"
    );
    p.write("c.txt", "c");
    assert!(asks_for(&stop(&p, true), "T4"));
    assert_eq!(
        log(&p).matches("copy: kept in step without git").count(),
        2,
        "both later verifications kept the copy in step: {}",
        log(&p)
    );
    p.write("d.txt", "d");
    let v = stop(&p, true);
    assert_eq!(
        v["stopReason"], "agentloop: the plan is complete and verified",
        "{v}"
    );
    assert_eq!(p.status()["status"], "completed");
    wait_for(&p, "the resident to end with the run", |_| gone(pid));
    assert!(!socket(&p).exists());
}

/// VALIDATE at the last Stop takes the check that Stop just ran, when it ran every
/// check VALIDATE would and on this very tree (the resident's copy was brought to the
/// claim's snapshot; git tells the hook the tree now).
#[test]
fn validate_takes_the_last_stops_check_on_the_same_tree() {
    let p = start(
        Scratch::new()
            .plan("# Two\n\n## T1: A\nVerify: sh tests/check.sh\n\n## T2: B\nDepends: T1\nVerify: sh tests/check.sh\n")
            .file("tests/check.sh", "test -f a.txt\n"),
    );
    assert!(asks_for(&stop(&p, false), "T1"));
    p.write("a.txt", "a");
    assert!(asks_for(&stop(&p, true), "T2"));
    wait_for(&p, "the resident's socket", |p| socket(p).exists());
    p.write("b.txt", "b");
    let v = stop(&p, true);
    assert_eq!(
        v["stopReason"], "agentloop: the plan is complete and verified",
        "{v}"
    );
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(md.contains("**passed**"), "{md}");
    assert!(
        md.contains("passed on this tree in the last iteration's check"),
        "{md}"
    );
}

#[test]
fn an_impostor_on_the_socket_is_not_asked_and_a_killed_resident_is_replaced() {
    let (p, pid) = at_t2();

    // Killed between two stops: the next verifies the full way, and a new one is started.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(&p, "the resident to die", |_| gone(pid));
    p.write("b.txt", "b");
    assert!(asks_for(&stop(&p, true), "T3"));
    wait_for(&p, "a new resident", |p| {
        resident_pid(p).is_some_and(|new| new != pid)
    });

    // The agent asks the resident itself, as a hook would but without the journal's
    // key: a copy refreshed for a snapshot of its making, the copy forgotten, the
    // resident ended. None is answered or acted on.
    let before = log(&p);
    for question in [
        r#"{"ask":"copy","seq":1,"now":{"id":"","head":null,"dirty":{}}}"#.to_string(),
        format!(
            "0123456789abcdef0123456789abcdef\n{}",
            serde_json::json!({"run_dir": p.run_dir(), "root": p.path(), "at_ms": 0, "question": {"ask": "forget"}})
        ),
        format!(
            "0123456789abcdef0123456789abcdef\n{}",
            serde_json::json!({"run_dir": p.run_dir(), "root": p.path(), "at_ms": 0, "question": {"ask": "end"}})
        ),
    ] {
        use std::io::{Read, Write};
        let mut s = std::os::unix::net::UnixStream::connect(socket(&p)).unwrap();
        s.write_all(format!("{question}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert_eq!(answer, "", "{question}");
    }
    assert_eq!(
        log(&p),
        before,
        "nothing was decided for the agent's questions"
    );
    let new = resident_pid(&p).expect("the resident still listens");
    assert!(!gone(new));

    // The agent puts a listener of its own in the socket's place, one that says the
    // surface is unchanged, and rewrites the test T3 runs.
    std::fs::remove_file(socket(&p)).unwrap();
    let listener = UnixListener::bind(socket(&p)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let stop_serving = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop_serving.clone();
    let impostor = std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(std::time::Duration::from_secs(1)))
                        .unwrap();
                    let mut line = String::new();
                    if std::io::BufReader::new(&s).read_line(&mut line).is_ok() && !line.is_empty()
                    {
                        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    let _ = (&s)
                        .write_all(b"{\"answer\":\"surface\",\"changes\":[],\"warning\":null}\n");
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    });
    p.write("tests/t.sh", "exit 0\n");
    p.write("c.txt", "x");
    let v = stop(&p, true);
    stop_serving.store(true, std::sync::atomic::Ordering::SeqCst);
    impostor.join().unwrap();
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no question reached the impostor"
    );
    assert!(
        v["stopReason"]
            .as_str()
            .is_some_and(|r| r.contains("waiting for a person")),
        "the rewritten test waits for a person: {v}"
    );
    let s = p.status();
    assert_ne!(s["status"], "completed", "{s}");
    assert!(s["gate"].is_object(), "{s}");
    // Its socket was taken away and a resident of agentloop's own started.
    wait_for(&p, "agentloop's own resident again", |p| {
        resident_pid(p).is_some()
    });
}

/// The journal's record kinds, with each verification's and surface check's outcome.
fn decisions(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.run_dir().join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let kind = v["kind"].as_str().unwrap_or_default().to_string();
            match kind.as_str() {
                "surface_checked" => format!("{kind} {}", v["data"]["changes"]),
                "verify_finished" => format!(
                    "{kind} {} {}",
                    v["data"]["passed"], v["data"]["fingerprint"]
                ),
                _ => kind,
            }
        })
        .collect()
}

#[test]
fn the_same_stops_decide_the_same_with_or_without_the_resident() {
    let with = project();
    let without = project();
    // A directory where the socket goes: no resident can listen there, so every hook
    // of this run verifies the full way (and its tries to start one fail).
    std::fs::create_dir(socket(&without)).unwrap();
    for p in [&with, &without] {
        assert!(asks_for(&stop(p, false), "T1"));
        p.write("a.txt", "a");
        assert!(asks_for(&stop(p, true), "T2"));
        if std::ptr::eq(p, &with) {
            wait_for(p, "the resident's socket", |p| socket(p).exists());
        }
        // A false claim, then a true one.
        let v = stop(p, true);
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .contains("Last attempt failed"),
            "{v}"
        );
        p.write("b.txt", "b");
        assert!(asks_for(&stop(p, true), "T3"));
        // The test T3 runs rewritten: the run waits for a person.
        p.write("tests/t.sh", "exit 0\n");
        p.write("c.txt", "x");
        let v = stop(p, true);
        assert!(
            v["stopReason"]
                .as_str()
                .is_some_and(|r| r.contains("waiting for a person")),
            "{v}"
        );
    }
    assert!(
        log(&with).contains("copy: kept in step without git"),
        "{}",
        log(&with)
    );
    assert!(log(&without).is_empty(), "{}", log(&without));
    assert_eq!(decisions(&with), decisions(&without));
}

/// A resident stopped (SIGSTOP: a debugger, a job control slip) between two stops: its
/// socket still takes connections but nothing answers. The next Stop hook waits for it
/// only so long, within the hook's own time, verifies the full way, replaces it, and
/// records; the stops after it are recorded too.
#[test]
fn a_stopped_resident_holds_no_stop_hook_past_its_time() {
    let p = start(
        Scratch::new()
            .plan(PLAN)
            .file("tests/t.sh", "test \"$(cat c.txt)\" = c\n")
            .config("[hook]\ntime_limit = \"12s\"\n"),
    );
    assert!(asks_for(&stop(&p, false), "T1"));
    p.write("a.txt", "a");
    assert!(asks_for(&stop(&p, true), "T2"));
    wait_for(&p, "the resident's socket", |p| socket(p).exists());
    let pid = resident_pid(&p).expect("a resident listens");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    p.write("b.txt", "b");
    let t = std::time::Instant::now();
    let v = stop(&p, true);
    let took = t.elapsed();
    assert!(asks_for(&v, "T3"), "{v}");
    assert!(
        took < std::time::Duration::from_secs(12),
        "the hook took {took:?}, past its time"
    );
    // The stopped one was ended (a stopped process takes SIGKILL), and a new one
    // answers the next stops.
    wait_for(&p, "the stopped resident gone", |_| gone(pid));
    p.write("c.txt", "c");
    assert!(asks_for(&stop(&p, true), "T4"));
    p.write("d.txt", "d");
    let v = stop(&p, true);
    assert_eq!(
        v["stopReason"], "agentloop: the plan is complete and verified",
        "{v}"
    );
}
