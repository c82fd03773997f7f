//! Chaos at random moments: the driver's whole process group (the driver and the git
//! and check processes it runs) SIGKILLed at random times of a four-worker run —
//! during merges, worktree updates and checks, not only at journal appends — and
//! resumed, again and again. No run may be left that cannot finish, no task lost or
//! done twice, the journal must verify and `gc` must leave nothing.

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use agentloop_testkit::sim::Rng;

use crate::support::{Project, wait_exit};

const PLAN: &str = "# Eight\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n\n## T3: Three\nDepends: T1\nVerify: test -f three.txt\n\n## T4: Four\nVerify: test -f four.txt\n\n## T5: Five\nVerify: test -f five.txt\n\n## T6: Six\nDepends: T2\nVerify: test -f six.txt\n\n## T7: Seven\nVerify: test -f seven.txt\n\n## T8: Eight\nVerify: test -f eight.txt\n";

/// Each task's file (and a line in a file every task touches, so merges have work to
/// do), after a short think.
const BODY: &str = "sleep 0.$((n % 3 + 1))\ncase $task in T1) f=one;; T2) f=two;; T3) f=three;; T4) f=four;; T5) f=five;; T6) f=six;; T7) f=seven;; T8) f=eight;; esac\ntouch $f.txt\nmkdir -p notes && echo \"$task\" > notes/$task.md\necho TASK_COMPLETE";

const TASKS: usize = 8;

fn project() -> Project {
    crate::workers::project(PLAN, BODY, "")
}

/// Starts `args` in a process group of its own, kills the group after `after`, and
/// waits for it; true if it was killed (not over by then).
fn kill_after(p: &Project, args: &[&str], after: Duration) -> bool {
    let mut child = p
        .cmd(args)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while t.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_exit(&mut child, Duration::from_secs(10));
    true
}

/// Whether the project has a run (a `run` killed early may have made none).
fn has_run(p: &Project) -> bool {
    let r = p.run(&["runs", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_str::<Vec<serde_json::Value>>(&r.stdout).is_ok_and(|v| !v.is_empty())
}

/// A failing round's project and cache, kept for reading (in `$TMPDIR/chaos-fail-*`).
fn keep(p: &Project) {
    let to = std::env::temp_dir().join(format!("chaos-fail-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&to);
    for (from, name) in [(p.path(), "project"), (p.cache.path(), "cache")] {
        let _ = std::process::Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to.join(name))
            .status();
    }
    eprintln!("kept in {}", to.display());
}

/// Each task's completed iterations (iterations run side by side: by number).
pub(crate) fn completions(p: &Project) -> std::collections::BTreeMap<String, usize> {
    use agentloop_journal::{Event, Outcome};
    let mut task_of = std::collections::BTreeMap::new();
    let mut n = std::collections::BTreeMap::new();
    for r in crate::crash::records(p) {
        match &r.event {
            Event::IterationStarted(s) => {
                task_of.insert(s.iteration, s.task.clone());
            }
            Event::IterationFinished(f) if f.outcome == Outcome::Completed => {
                *n.entry(task_of[&f.iteration].clone()).or_insert(0) += 1
            }
            _ => {}
        }
    }
    n
}

/// What a finished round must show.
fn sound(p: &Project, round: u32, kills: u32) {
    let s = p.status();
    assert_eq!(
        s["status"], "completed",
        "round {round} after {kills} kills"
    );
    assert_eq!(p.run(&["journal", "verify"]).code, Some(0), "round {round}");
    let done = completions(p);
    assert_eq!(done.len(), TASKS, "round {round}: {done:?}");
    assert!(done.values().all(|&n| n == 1), "round {round}: {done:?}");
    let branch = format!("agentloop/{}", s["run_id"].as_str().unwrap());
    let merged = p.git_cmd(&["log", "--first-parent", "--merges", "--format=%s", &branch]);
    assert_eq!(
        merged.lines().count(),
        TASKS,
        "round {round}: one merge per task on the branch's own line:\n{merged}"
    );
    let reachable = p.git_cmd(&["log", "--format=%s", &branch]);
    assert!(
        !reachable.contains("attempt of iteration") && !reachable.contains("work in progress"),
        "round {round}: unverified work reachable from the branch:\n{reachable}"
    );
    let gc = p.run(&["gc"]);
    assert_eq!(gc.code, Some(0), "round {round}: {}", gc.stderr);
    crate::workers::nothing_left(p);
}

#[test]
fn a_hundred_sigkills_at_random_moments_of_a_four_worker_run() {
    let mut r = Rng::new(0xc4a05);
    let (mut kills, mut rounds) = (0u32, 0u32);
    let t = Instant::now();
    while kills < 100 {
        rounds += 1;
        let p = project();
        // Kill it at random moments until it is over (or enough kills). A `run` killed
        // before its run's first record made no run: it is started again, as a person
        // would (and the half-made directory is nobody's run).
        let mut round_kills = 0;
        loop {
            let started = has_run(&p);
            let args: &[&str] = if started {
                &["resume", "--quiet"]
            } else {
                &["run", "--quiet"]
            };
            // Each driver lives up to a second: a run of a few seconds is cut all
            // through its life over the rounds (and a kill lands in its takeover as
            // often as in its work).
            let after = Duration::from_millis(r.range(30, 1_000));
            if !kill_after(&p, args, after) {
                break;
            }
            kills += 1;
            round_kills += 1;
            if (has_run(&p) && p.status()["status"] == "completed") || round_kills >= 25 {
                break;
            }
        }
        if !has_run(&p) {
            let r = p.run(&["run", "--quiet", "--no-wait"]);
            assert_eq!(r.code, Some(0), "round {rounds}: {}", r.stderr);
        }
        // Then left alone, it finishes: no resume may fail or start work it cannot do.
        for attempt in 0..3 {
            if p.status()["status"] == "completed" {
                break;
            }
            let mut child = p
                .cmd(&["resume", "--quiet", "--no-wait"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let t = Instant::now();
            while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if child.try_wait().unwrap().is_none() {
                let log = p.run(&["log"]).stdout;
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                let ps = std::process::Command::new("ps")
                    .args(["-eo", "pid,ppid,pgid,args", "--forest"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                let ps: Vec<&str> = ps
                    .lines()
                    .filter(|l| l.contains("agentloop") || l.contains("sh "))
                    .collect();
                eprintln!("{}", ps.join("\n"));
                keep(&p);
                let _ = child.kill();
                panic!(
                    "round {rounds}: resume {attempt} after {round_kills} kills has not ended in 60 s; the log ends:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            let out = child.wait_with_output().unwrap();
            if out.status.code() != Some(0) {
                keep(&p);
            }
            assert_eq!(
                out.status.code(),
                Some(0),
                "round {rounds}, resume {attempt} after {round_kills} kills: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                p.run(&["status"]).stdout
            );
        }
        sound(&p, rounds, round_kills);
        eprintln!(
            "round {rounds}: {round_kills} kills, {kills} in all, {:?}",
            t.elapsed()
        );
    }
    assert!(rounds >= 3, "{kills} kills in {rounds} rounds");
}
