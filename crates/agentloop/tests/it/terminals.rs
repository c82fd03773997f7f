//! Terminals and pipes: no command panics on a closed pipe or a full disk, `watch`
//! says when it has no terminal, and quits on Ctrl-C or a signal leaving the terminal
//! as it found it (run inside a real pseudo-terminal by `script`).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{BIN, Project, wait_exit};

/// A finished run with enough journal lines that `head -1` closes the pipe early.
fn finished() -> Project {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    p
}

#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let p = finished();
    for args in [
        "log",
        "log --json",
        "status",
        "status --json",
        "plan check",
        "runs",
        "config show",
    ] {
        // The reader is gone before the first write: every write meets a closed pipe.
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("(sleep 0.2; '{BIN}' {args}) | true"))
            .current_dir(p.path())
            .env("NO_COLOR", "1")
            .env("XDG_STATE_HOME", p.state_home())
            .env("XDG_CONFIG_HOME", p.xdg_config_home())
            .env("XDG_CONFIG_HOME", p.xdg_config_home())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "{args}: {err}");
    }
}

#[test]
fn a_full_disk_is_an_error_that_says_so() {
    let p = finished();
    for args in [&["status"][..], &["status", "--json"], &["log"]] {
        let out = p
            .cmd(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.starts_with("error: cannot write to standard output: No space left on device"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn watch_without_a_terminal_says_it_needs_one() {
    let p = finished();
    let r = p.run(&["watch"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .starts_with("error: agentloop watch needs a terminal"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

/// `agentloop watch` in a pseudo-terminal made by `script`; returns the child (its
/// stdin is the terminal's keyboard) and where the screen goes.
fn watch_in_a_terminal(p: &Project) -> (std::process::Child, std::path::PathBuf) {
    let screen = p.path().join(".git/screen");
    let child = Command::new("script")
        .args(["-q", "-f", "-e", "-c"])
        // A terminal of a real size: without one it has none (no terminal here).
        .arg(format!("stty cols 100 rows 30; exec '{BIN}' watch"))
        .arg(&screen)
        .current_dir(p.path())
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", p.state_home())
        .env("XDG_CONFIG_HOME", p.xdg_config_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the first frame.
    let t = std::time::Instant::now();
    while !std::fs::read_to_string(&screen).is_ok_and(|s| s.contains("q or Ctrl-C quit")) {
        assert!(t.elapsed() < Duration::from_secs(20), "watch drew nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, screen)
}

/// The terminal is back as it was: the alternate screen left, the cursor shown.
fn restored(screen: &std::path::Path) -> bool {
    let s = std::fs::read_to_string(screen).unwrap_or_default();
    s.contains("\x1b[?1049l") && s.contains("\x1b[?25h")
}

/// A run with workers finished: `watch` shows where its work is, the integration
/// branch; Ctrl-C quits it.
#[test]
fn ctrl_c_quits_watch_and_restores_the_terminal() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet", "--workers", "2"]).code, Some(0));
    let s = p.status();
    let branch = s["workers"]["integration"]["branch"]
        .as_str()
        .expect("a run with workers has an integration branch")
        .to_string();
    assert_eq!(s["loop"]["branch"], branch.as_str());
    assert_eq!(s["loop"]["stage"], "done");
    let (mut child, screen) = watch_in_a_terminal(&p);
    let drawn = std::fs::read_to_string(&screen).unwrap();
    assert!(
        drawn.contains("integration") && drawn.contains(&branch),
        "{branch} in {drawn}"
    );
    child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    let st = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(st.code(), Some(0), "watch quit on Ctrl-C");
    assert!(restored(&screen));
}

#[test]
fn a_terminating_signal_quits_watch_and_restores_the_terminal() {
    let p = finished();
    let (mut child, screen) = watch_in_a_terminal(&p);
    let watch = watch_pid(&p);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(watch),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let st = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(st.code(), Some(130), "watch ended as interrupted");
    assert!(restored(&screen));
}

/// The pid of the `watch` under `script` in the project.
fn watch_pid(p: &Project) -> i32 {
    crate::support::processes_in(p.path())
        .iter()
        .find(|l| l.contains(" watch") && !l.contains("script"))
        .expect("the watch process")
        .split_whitespace()
        .next()
        .unwrap()
        .parse::<i32>()
        .unwrap()
}

/// The terminal goes away under `watch` (the terminal program killed: an ssh
/// connection dropped, a tmux session killed): `watch` ends within moments, and spins
/// meanwhile on nothing (it once read its dead terminal for ever at full speed,
/// deaf to SIGTERM).
#[test]
fn watch_ends_when_its_terminal_goes_away() {
    let p = finished();
    let (mut child, _screen) = watch_in_a_terminal(&p);
    let watch = watch_pid(&p);
    // `script` killed outright: the terminal's other end closes, and nobody says so.
    child.kill().unwrap();
    child.wait().unwrap();
    let t = std::time::Instant::now();
    while crate::support::alive(&watch.to_string()) {
        if t.elapsed() > Duration::from_secs(10) {
            let seen = crate::support::processes_below(watch as u32);
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(watch),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("watch outlived its terminal: {seen}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `run --interactive` on a real terminal: between iterations a menu; `s` shows the
/// tasks, `d` makes the next iteration a DEBUG one, `x` leaves the run saved for
/// `resume`. Without a terminal it refuses, and no run is made.
#[test]
fn the_interactive_menu_between_iterations() {
    let p = crate::support::scripted(
        "# Two\n\n## T1: First\nVerify: test -f one.txt\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n",
        "case $task in T1) touch one.txt ;; T2) touch two.txt ;; esac\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--interactive"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("there is none"), "{}", r.stderr);
    let screen = p.path().join(".git/screen");
    let mut child = Command::new("script")
        .args(["-q", "-f", "-e", "-c"])
        .arg(format!(
            "stty cols 120 rows 40; exec '{BIN}' run --interactive"
        ))
        .arg(&screen)
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", p.state_home())
        .env("XDG_CONFIG_HOME", p.xdg_config_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = |what: &str, times: usize| {
        let t = std::time::Instant::now();
        while std::fs::read_to_string(&screen)
            .unwrap_or_default()
            .matches(what)
            .count()
            < times
        {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "never saw {what:?} {times}×: {}",
                std::fs::read_to_string(&screen).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let mut say = |line: &str| {
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    seen("[c] continue development (1 task left)", 1);
    say("s\n");
    seen("T1 done", 1);
    seen("[c] continue development", 2);
    say("d\n");
    // A person asked for the DEBUG iteration.
    seen("debugging, as asked", 1);
    seen("[c] continue development", 3);
    say("x\n");
    let st = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(
        st.code(),
        Some(6),
        "{}",
        std::fs::read_to_string(&screen).unwrap_or_default()
    );
    let kinds: Vec<String> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["work", "debug"]);
    assert!(crate::support::journal_has(&p, "\"source\":\"menu\""));
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}
