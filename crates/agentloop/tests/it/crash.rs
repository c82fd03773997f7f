//! Kill the driver with SIGKILL at many points of a scripted run, resume each time,
//! and check that nothing was lost or repeated and the end is the same as without
//! the crash.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;

use agentloop_journal::{Event, Outcome, Record};

use crate::support::Project;

/// What must be equal between an interrupted and an uninterrupted run.
#[derive(Debug, PartialEq)]
pub(crate) struct End {
    status: String,
    tasks: Vec<(String, String)>,
    files: BTreeMap<String, String>,
}

pub(crate) fn end(p: &Project) -> End {
    let s = p.status();
    let tasks = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut files = BTreeMap::new();
    for f in ["src/greet.sh", "README.md"] {
        files.insert(
            f.to_string(),
            std::fs::read_to_string(p.path().join(f)).unwrap_or_default(),
        );
    }
    End {
        status: s["status"].as_str().unwrap().to_string(),
        tasks,
        files,
    }
}

/// The run's journal records, read by the binary (which holds the project's key).
pub(crate) fn records(p: &Project) -> Vec<Record> {
    p.run(&["log", "--json"])
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Record {
                seq: v["seq"].as_u64().unwrap(),
                time: v["time"].as_str().unwrap().to_string(),
                event: serde_json::from_value(v["event"].clone()).unwrap(),
            }
        })
        .collect()
}

/// Each task is completed exactly once in the journal.
pub(crate) fn completions(p: &Project) -> BTreeMap<String, usize> {
    let mut open_task = String::new();
    let mut n = BTreeMap::new();
    for r in records(p) {
        match &r.event {
            Event::IterationStarted(s) => open_task = s.task.clone(),
            Event::IterationFinished(f) if f.outcome == Outcome::Completed => {
                *n.entry(open_task.clone()).or_insert(0) += 1
            }
            _ => {}
        }
    }
    n
}

/// A `run` killed before its run's first record is durable made no run: readers do not
/// see the half-made directory, a new `run` starts, and `gc` removes the directory.
#[test]
fn a_run_killed_before_its_first_record_made_no_run() {
    let p = Project::example();
    let out = p.run_failing_at(&["run", "--quiet"], "before-append:1");
    assert_eq!(out.status.signal(), Some(9));
    let runs = p.path().join(".agentloop/runs");
    let half: Vec<_> = std::fs::read_dir(&runs).unwrap().flatten().collect();
    assert_eq!(half.len(), 1, "the directory the killed run began");
    assert_eq!(p.run(&["runs", "--json"]).stdout.trim(), "[]");
    let r = p.run(&["status"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("no runs"), "{}", r.stderr);
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    // Left for a while, the half-made directory is what `gc` removes (a run being made
    // right now is left alone).
    let dir = half[0].path();
    assert!(!p.run(&["gc", "--dry-run"]).stdout.contains("never made"));
    let touched = std::process::Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(touched.success());
    let r = p.run(&["gc"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!dir.exists(), "{}{}", r.stdout, r.stderr);
    assert_eq!(p.run(&["runs", "--json"]).code, Some(0));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn sigkill_at_every_journal_append_then_resume() {
    let reference = Project::example();
    let r = reference.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let want = end(&reference);
    let events = records(&reference).len() as u64;
    assert!(events >= 19, "the reference run has {events} events");

    let (mut kill_points, mut first_kills) = (0, 0);
    // Before or after every journal append, alternately (each record once, as the
    // workers' and the store's kill tests do: the simulator kills on both sides of
    // every effect). The resumed driver is killed again four records later.
    for seq in 2..=events {
        let point = if seq % 2 == 0 {
            "before-append"
        } else {
            "after-append"
        };
        let p = Project::example();
        let out = p.run_failing_at(&["run", "--quiet"], &format!("{point}:{seq}"));
        if out.status.signal() != Some(9) {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{point}:{seq} neither killed nor completed"
            );
            continue;
        }
        kill_points += 1;
        first_kills += 1;
        // The journal is intact after a kill (at most a torn tail, never a bad line).
        let v = p.run(&["journal", "verify"]);
        assert_eq!(v.code, Some(0), "{point}:{seq}: {}", v.stderr);
        // Kill the resumed driver once more a few events later, then finish.
        if p.status()["status"] != "completed" {
            let again =
                p.run_failing_at(&["resume", "--quiet"], &format!("after-append:{}", seq + 4));
            if again.status.signal() == Some(9) {
                kill_points += 1;
            } else {
                assert_eq!(
                    again.status.code(),
                    Some(0),
                    "{point}:{seq} resume: {}",
                    String::from_utf8_lossy(&again.stderr)
                );
            }
        }
        if p.status()["status"] != "completed" {
            let r = p.run(&["resume", "--quiet"]);
            assert_eq!(r.code, Some(0), "{point}:{seq} last resume: {}", r.stderr);
        }
        assert_eq!(end(&p), want, "{point}:{seq}");
        let done = completions(&p);
        assert!(
            done.values().all(|&n| n == 1),
            "{point}:{seq}: a task completed twice: {done:?}"
        );
        assert_eq!(done.len(), 3, "{point}:{seq}: {done:?}");
        assert_eq!(p.run(&["journal", "verify"]).code, Some(0));
    }
    // Every record's point was hit, and most resumed drivers were killed again.
    assert_eq!(first_kills, events - 1, "records whose kill point was hit");
    assert!(
        kill_points >= first_kills + first_kills / 2,
        "only {kill_points} kill points were hit"
    );
}

/// A git of agentloop's killed while it wrote the project's index left `index.lock`
/// beside agentloop's mark: `gc` removes it, and the person's git works again. A lock
/// with no mark of agentloop's is a person's git and stays.
#[test]
fn gc_removes_the_index_lock_a_killed_git_of_agentloops_left_and_no_other() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let git = p.path().join(".git");
    let lock = git.join("index.lock");
    // A person's lock: no mark.
    std::fs::write(&lock, "").unwrap();
    let r = p.run(&["gc"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(lock.exists(), "a person's lock stays: {}", r.stdout);
    std::fs::remove_file(&lock).unwrap();
    // agentloop's mark, made by a process that is gone (a driver killed while its
    // `git commit` ran), and the lock that git left after it.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    std::fs::write(git.join("agentloop-index.owner"), format!("{dead} 1\n")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&lock, "").unwrap();
    let st = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ])
        .current_dir(p.path())
        .output()
        .unwrap();
    assert!(!st.status.success(), "the lock blocks the person's git");
    let r = p.run(&["gc", "--dry-run"]);
    assert!(
        r.stdout
            .contains("would remove .git/index.lock (left by a killed git of agentloop's)"),
        "{}",
        r.stdout
    );
    assert!(lock.exists(), "a dry run removes nothing");
    let r = p.run(&["gc"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("removed .git/index.lock"), "{}", r.stdout);
    assert!(!lock.exists());
    assert!(!git.join("agentloop-index.owner").exists());
    let st = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ])
        .current_dir(p.path())
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
}
