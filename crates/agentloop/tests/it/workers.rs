//! Runs with workers: tasks at once in their own worktrees, the verified merge queue,
//! conflicts and failures on the merged result going back to their agent, the user's
//! branch and tree untouched until `land`, and crashes at every journal append.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::support::{Project, Scratch, journal_has, wait_exit, wait_for};

/// The agent of [`FOUR`]: each task's file, then the claim.
const MAKE: &str = "case $task in T1) touch one.txt;; T2) touch two.txt;; T3) touch three.txt;; T4) touch four.txt;; esac\necho TASK_COMPLETE";

pub(crate) const FOUR: &str = "# Four\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n\n## T3: Three\nVerify: test -f three.txt\n\n## T4: Four\nVerify: test -f four.txt\n";

/// A scripted agent for worktrees: its task from the prompt, its attempt number kept
/// in `state` (an absolute directory: `.git` is a file in a worktree), then `body`.
fn worker_agent(state: &std::path::Path, body: &str) -> String {
    format!(
        r#"prompt=$(cat)
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
state={state}
mkdir -p "$state"
n=$(cat "$state/$task" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$state/$task"
{body}
"#,
        state = state.display()
    )
}

pub(crate) fn project(plan: &str, body: &str, config: &str) -> Project {
    let p = Scratch::new().plan(plan).config(config).build();
    let agent = worker_agent(&p.path().join(".git/agent-state"), body);
    p.write("agent.sh", agent);
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\nworkers = 4\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n\n{config}",
            p.path().join("agent.sh").display()
        ),
    );
    p.commit("a worker agent");
    p
}

pub(crate) fn events(p: &Project) -> Vec<serde_json::Value> {
    p.run(&["log", "--json"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].clone())
        .collect()
}

/// A git command's output, trimmed.
pub(crate) fn git(p: &Project, args: &[&str]) -> String {
    p.git_cmd(args).trim().to_string()
}

pub(crate) fn integration(p: &Project) -> String {
    format!("agentloop/{}", p.status()["run_id"].as_str().unwrap())
}

/// Nothing of the run is left in git or on disk but its integration branch.
pub(crate) fn nothing_left(p: &Project) {
    let worktrees = p.git_cmd(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "worktrees left: {worktrees}"
    );
    let branches = p.git_cmd(&["branch", "--list", "agentloop/*"]);
    assert_eq!(branches.lines().count(), 1, "branches left: {branches}");
    let dir = p.cache.path().join("agentloop/worktrees");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left on disk: {left:?}");
    assert!(crate::support::processes_in(p.cache.path()).is_empty());
}

#[test]
fn four_tasks_run_at_once_and_the_users_branch_and_tree_stay_as_they_were() {
    let p = project(FOUR, &format!("sleep 1\n{MAKE}"), "");
    let head = git(&p, &["rev-parse", "HEAD"]);
    let t = std::time::Instant::now();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    // Every agent started before the first one finished.
    let ev = events(&p);
    let first_done = ev
        .iter()
        .position(|e| e["kind"] == "agent_finished")
        .unwrap();
    let started = ev[..first_done]
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .count();
    assert_eq!(started, 4, "{ev:?}");
    assert_eq!(ev.iter().filter(|e| e["kind"] == "merged").count(), 4);
    // The results name their task, in the order they come.
    for t in ["T1", "T2", "T3", "T4"] {
        assert!(
            r.stderr.contains(&format!("] {t}: verified, merged")),
            "{}",
            r.stderr
        );
    }
    // The user's branch and tree are as they were; the work is on the integration branch.
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    assert!(!p.path().join("one.txt").exists());
    let branch = integration(&p);
    let files = p.git_cmd(&["ls-tree", "--name-only", &branch]);
    for f in ["one.txt", "two.txt", "three.txt", "four.txt"] {
        assert!(files.lines().any(|l| l == f), "{f} not in {files}");
    }
    nothing_left(&p);
}

#[test]
fn two_tasks_on_the_same_line_one_merges_the_other_is_redone_on_the_new_head() {
    let plan = "# Same line\n\n## T1: One\nVerify: grep -q one shared.txt\n\n## T2: Two\nVerify: grep -q two shared.txt\n";
    let p = project(
        plan,
        r#"case "$task:$n" in
  T1:*) echo one > shared.txt ;;
  T2:1) sleep 0.5; echo two > shared.txt ;;
  T2:*) grep -q '<<<<<<<' shared.txt && printf 'one\ntwo\n' > shared.txt ;;
esac
echo TASK_COMPLETE"#,
        "[verify]\ncommands = [\"! grep -q '<<<<<<<' shared.txt\"]\n",
    );
    p.write("shared.txt", "zero\n");
    p.commit("the shared file");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let failed: Vec<_> = ev.iter().filter(|e| e["kind"] == "merge_failed").collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["data"]["conflict"], true);
    assert!(
        failed[0]["data"]["digest"]
            .as_str()
            .unwrap()
            .contains("conflicts with work other workers merged meanwhile, in shared.txt"),
        "{}",
        failed[0]["data"]["digest"]
    );
    // T2's second attempt was told, and counted as an attempt.
    let s = p.status();
    assert_eq!(s["tasks"][1]["attempts"], 2);
    // The integration branch passes every task's check.
    let merged = git(&p, &["show", &format!("{}:shared.txt", integration(&p))]);
    assert_eq!(merged, "one\ntwo");
    // Only verified states are reachable from the branch: T2's conflicting attempt
    // and the work in progress its catch-up committed are not (git bisect meets
    // nothing that failed); they stay under refs/agentloop/.
    let branch = integration(&p);
    let reachable = git(&p, &["log", "--format=%s", &branch]);
    assert!(
        !reachable.contains("attempt of iteration") && !reachable.contains("work in progress"),
        "{reachable}"
    );
    let conflicted = git(
        &p,
        &[
            "log",
            "--format=%H %s",
            "-G<<<<<<<",
            &branch,
            "--",
            "shared.txt",
        ],
    );
    assert!(
        conflicted.is_empty(),
        "commits with conflict markers: {conflicted}"
    );
    let run = p.status()["run_id"].as_str().unwrap().to_string();
    let kept = git(
        &p,
        &[
            "log",
            "--format=%s",
            &format!("refs/agentloop/{run}/attempts/T2"),
        ],
    );
    assert!(kept.contains("attempt of iteration"), "{kept}");
    nothing_left(&p);
}

#[test]
fn a_task_that_breaks_another_after_merging_never_lands() {
    // Each passes alone; together they break the run's check until T2 makes b.txt
    // compatible.
    let plan = "# Together\n\n## T1: A\nVerify: test -f a.txt\n\n## T2: B\nVerify: test -f b.txt\n";
    let p = project(
        plan,
        r#"case "$task:$n" in
  T1:*) echo a > a.txt ;;
  T2:1) sleep 0.7; echo plain > b.txt ;;
  T2:*) echo compatible > b.txt ;;
esac
echo TASK_COMPLETE"#,
        "[verify]\ncommands = [\"sh check.sh\"]\n",
    );
    p.write(
        "check.sh",
        "if [ -f a.txt ] && [ -f b.txt ] && ! grep -q compatible b.txt; then echo 'FAIL: b.txt breaks a.txt'; exit 1; fi\n",
    );
    p.commit("the run's check");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let failed: Vec<_> = ev.iter().filter(|e| e["kind"] == "merge_failed").collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["data"]["conflict"], false);
    assert!(
        failed[0]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("on the merged result, `sh check.sh` exited 1"),
        "{failed:?}"
    );
    // The breaking version was never on the integration branch.
    let branch = integration(&p);
    for c in git(&p, &["rev-list", "--first-parent", &branch]).lines() {
        let b = p.git_cmd(&["ls-tree", "--name-only", c]);
        if b.lines().any(|f| f == "b.txt") {
            assert_eq!(
                git(&p, &["show", &format!("{c}:b.txt")]),
                "compatible",
                "{c}"
            );
        }
    }
    nothing_left(&p);
}

#[test]
fn land_fast_forwards_the_checked_out_branch_unless_it_moved() {
    let body = MAKE;
    let p = project(FOUR, body, "");
    let toml = p
        .read("agentloop.toml")
        .replace("workers = 4\n", "workers = 4\nland = \"ff\"\n");
    p.write("agentloop.toml", toml);
    p.commit("land");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        git(&p, &["rev-parse", "HEAD"]),
        git(&p, &["rev-parse", &integration(&p)])
    );
    assert!(p.path().join("four.txt").exists());
    assert!(journal_has(&p, "\"kind\":\"landed\""));

    // The user commits while the run works: it does not land.
    let p = project(FOUR, &format!("sleep 1\n{MAKE}"), "");
    let toml = p
        .read("agentloop.toml")
        .replace("workers = 4\n", "workers = 4\nland = \"ff\"\n");
    p.write("agentloop.toml", toml);
    p.commit("land");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the agents", |p| journal_has(p, "iteration_started"));
    p.write("mine.txt", "my own work\n");
    p.commit("my own work");
    let mine = git(&p, &["rev-parse", "HEAD"]);
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), mine);
    assert!(!journal_has(&p, "\"kind\":\"landed\""));
    // `agentloop land` refuses a fast-forward it cannot make, and says how; `--merge`
    // (after `--dry-run`, which changes nothing) merges the verified branch.
    let r = p.run(&["land"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("moved since run") && r.stderr.contains("agentloop land --merge"),
        "{}",
        r.stderr
    );
    let r = p.run(&["land", "--merge", "--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("would merge agentloop/") && r.stdout.contains("(4 of 4 tasks verified)"),
        "{}",
        r.stdout
    );
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), mine);
    let r = p.run(&["land", "--merge"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(p.path().join("four.txt").exists() && p.path().join("mine.txt").exists());
    assert_eq!(
        git(&p, &["rev-parse", "HEAD^1"]),
        mine,
        "a merge commit on top of the user's work"
    );
    assert!(journal_has(&p, "\"kind\":\"landed\""));
    assert!(p.run(&["status"]).stdout.contains("(landed)"));
    let r = p.run(&["land"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("nothing to land"), "{}", r.stdout);
}

/// Without `land = "ff"`, the run's last lines say where its work is; `agentloop land`
/// fast-forwards to it (`--dry-run` first: nothing moves).
#[test]
fn land_takes_a_finished_runs_work_onto_the_branch() {
    let p = project(FOUR, MAKE, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("`agentloop land` takes it onto your branch"),
        "{}",
        r.stderr
    );
    let before = git(&p, &["rev-parse", "HEAD"]);
    let r = p.run(&["land", "--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("would fast-forward"), "{}", r.stdout);
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), before);
    let r = p.run(&["land"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("landed:"), "{}", r.stdout);
    assert_eq!(
        git(&p, &["rev-parse", "HEAD"]),
        git(&p, &["rev-parse", &integration(&p)])
    );
    assert!(p.path().join("four.txt").exists());
    assert!(p.run(&["status"]).stdout.contains("(landed)"));
    let run = p.status()["run_id"].as_str().unwrap().to_string();
    let handoff = p.read(&format!(".agentloop/runs/{run}/handoff.md"));
    assert!(
        handoff.contains("- The work: branch `agentloop/"),
        "{handoff}"
    );
    let summary = p.read(&format!(".agentloop/runs/{run}/summary.md"));
    assert!(
        summary.contains("The work is on branch `agentloop/"),
        "{summary}"
    );

    // A `land` killed after the fast-forward and before its record (the branch moved
    // by hand here, as it would have): the next `land` records it, nothing moves.
    let k = project(FOUR, MAKE, "");
    assert_eq!(k.run(&["run", "--quiet"]).code, Some(0));
    git(&k, &["merge", "--ff-only", "-q", &integration(&k)]);
    let head = git(&k, &["rev-parse", "HEAD"]);
    assert!(!k.run(&["status"]).stdout.contains("(landed)"));
    let r = k.run(&["land"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("recorded as landed"), "{}", r.stdout);
    assert_eq!(git(&k, &["rev-parse", "HEAD"]), head);
    assert!(k.run(&["status"]).stdout.contains("(landed)"));
    // A run without an integration branch has nothing to land.
    let q = crate::support::Project::example();
    assert_eq!(q.run(&["run", "--quiet"]).code, Some(0));
    let r = q.run(&["land"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("has no integration branch"),
        "{}",
        r.stderr
    );
}

#[test]
fn sigkill_with_four_workers_at_every_journal_append_then_resume() {
    let body = MAKE;
    let reference = project(FOUR, body, "");
    assert_eq!(reference.run(&["run", "--quiet"]).code, Some(0));
    let total = events(&reference).len() as u64;
    let mut kill_points = 0;
    // Before and after every journal append, alternately (each seq once).
    for seq in 2..=total {
        let point = if seq % 2 == 0 {
            "after-append"
        } else {
            "before-append"
        };
        let p = project(FOUR, body, "");
        let out = p.run_failing_at(&["run", "--quiet"], &format!("{point}:{seq}"));
        if out.status.signal() == Some(9) {
            kill_points += 1;
            assert_eq!(p.run(&["journal", "verify"]).code, Some(0), "{point}:{seq}");
            if p.status()["status"] != "completed" {
                let r = p.run(&["resume", "--quiet"]);
                assert_eq!(r.code, Some(0), "{point}:{seq}: {}", r.stderr);
            }
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{point}:{seq}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let s = p.status();
        assert_eq!(s["status"], "completed", "{point}:{seq}");
        let ev = events(&p);
        // Every task done exactly once, one merge commit each on the branch.
        let completed = ev
            .iter()
            .filter(|e| e["kind"] == "iteration_finished" && e["data"]["outcome"] == "completed")
            .count();
        assert_eq!(completed, 4, "{point}:{seq}");
        let branch = integration(&p);
        // On the integration branch's own line (a task branch brought up to date has
        // merges of its own), one merge per task.
        let mut merged: Vec<String> = git(
            &p,
            &["log", "--first-parent", "--merges", "--format=%s", &branch],
        )
        .lines()
        .map(String::from)
        .collect();
        merged.sort();
        assert_eq!(
            merged,
            [
                "agentloop: T1 One",
                "agentloop: T2 Two",
                "agentloop: T3 Three",
                "agentloop: T4 Four"
            ],
            "{point}:{seq}: duplicate or lost merge"
        );
        nothing_left(&p);
    }
    assert!(kill_points >= 30, "only {kill_points} kill points");
}

#[test]
fn three_real_claude_code_workers_at_once() {
    use crate::real_cli::{Cli, say};
    let cli = Cli::Claude;
    // A barrier: each agent's command waits (at most 30 s) until all three are running,
    // however slowly the machine starts them.
    let barrier = tempfile::tempdir().unwrap();
    let b = barrier.path().display().to_string();
    let lane = |task: &str, file: &str| {
        (
            format!("## Your task: {task} "),
            vec![
                cli.shell(
                    &format!(
                        "touch {b}/{task}; i=0; while [ $(ls {b} | wc -l) -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo {task} > {file}"
                    ),
                    100,
                    10,
                ),
                say(&format!("Wrote {file}.\nTASK_COMPLETE"), 120, 8, 0),
            ],
        )
    };
    let server = cli.mock_lanes(vec![
        lane("T1", "a.txt"),
        lane("T2", "b.txt"),
        lane("T3", "c.txt"),
    ]);
    let plan = "# Three\n\n## T1: A\nVerify: grep -q T1 a.txt\n\nWrite a.txt.\n\n## T2: B\nVerify: grep -q T2 b.txt\n\nWrite b.txt.\n\n## T3: C\nVerify: grep -q T3 c.txt\n\nWrite c.txt.\n";
    let p = cli.project(&server, plan, "");
    let toml = p
        .read("agentloop.toml")
        .replace("[run]\n", "[run]\nworkers = 3\n");
    p.write("agentloop.toml", toml);
    p.commit("three workers");
    let head = git(&p, &["rev-parse", "HEAD"]);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let first_done = ev
        .iter()
        .position(|e| e["kind"] == "agent_finished")
        .unwrap();
    let started = ev[..first_done]
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .count();
    assert_eq!(started, 3, "the three Claude Code processes ran at once");
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), head);
    let branch = integration(&p);
    for (f, t) in [("a.txt", "T1"), ("b.txt", "T2"), ("c.txt", "T3")] {
        assert_eq!(git(&p, &["show", &format!("{branch}:{f}")]), t);
    }
    let s = p.status();
    assert!(s["tokens"]["input"].as_u64().unwrap() >= 660, "{s}");
    nothing_left(&p);
}

#[test]
fn stop_now_ends_every_worker_and_gc_clears_what_a_killed_driver_left() {
    let p = project(FOUR, "echo working\nsleep 60\necho TASK_COMPLETE", "");
    let all_started = |p: &Project| {
        events(p)
            .iter()
            .filter(|e| e["kind"] == "iteration_started")
            .count()
            == 4
    };
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "four agents", all_started);
    let t = std::time::Instant::now();
    assert_eq!(p.run(&["stop", "--now"]).code, Some(0));
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(20)).code(),
        Some(6)
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(p.status()["status"], "stopped");
    nothing_left(&p);

    // A driver killed with its four agents at work leaves them; gc clears it all once
    // the run is over.
    let p = project(FOUR, "echo working\nsleep 60\necho TASK_COMPLETE", "");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "four agents", all_started);
    driver.kill().unwrap();
    driver.wait().unwrap();
    assert!(!crate::support::processes_in(p.cache.path()).is_empty());
    assert_eq!(p.run(&["stop"]).code, Some(0));
    let dry = p.run(&["gc", "--dry-run"]);
    assert!(
        dry.stdout.contains("would remove worktrees/"),
        "{}",
        dry.stdout
    );
    let r = p.run(&["gc"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("left at work"), "{}", r.stdout);
    // The task branches went to refs of their attempts, and those go too.
    assert!(
        r.stdout.contains("failed attempts and results"),
        "{}",
        r.stdout
    );
    assert_eq!(p.git_cmd(&["for-each-ref", "refs/agentloop/"]), "");
    std::thread::sleep(Duration::from_millis(300));
    nothing_left(&p);
    assert_eq!(
        p.run(&["gc"]).stderr.trim(),
        "agentloop gc: nothing to remove"
    );
}

#[test]
fn one_isolated_worker_leaves_the_tree_to_the_user() {
    let p = project(
        "# Two\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nDepends: T1\nVerify: test -f two.txt\n",
        "sleep 0.5\ncase $task in T1) touch one.txt;; T2) touch two.txt;; esac\necho TASK_COMPLETE",
        "",
    );
    let toml = p
        .read("agentloop.toml")
        .replace("workers = 4\n", "workers = 1\nisolate = true\n");
    p.write("agentloop.toml", toml);
    p.commit("one isolated worker");
    let head = git(&p, &["rev-parse", "HEAD"]);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the agent", |p| journal_has(p, "iteration_started"));
    // The user goes on working in the tree meanwhile.
    p.write("notes.txt", "mine\n");
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
    assert_eq!(git(&p, &["rev-parse", "HEAD"]), head);
    assert_eq!(p.read("notes.txt"), "mine\n");
    assert!(!p.path().join("one.txt").exists());
    let branch = integration(&p);
    assert_eq!(
        git(
            &p,
            &["rev-list", "--first-parent", "--merges", "--count", &branch]
        ),
        "2"
    );
    let files = git(&p, &["ls-tree", "--name-only", &branch]);
    assert!(
        files.contains("two.txt") && !files.contains("notes.txt"),
        "{files}"
    );
    nothing_left(&p);
}

#[test]
fn a_blocked_task_holds_up_no_other_and_pause_starts_nothing_new() {
    let p = project(
        FOUR,
        "case $task in T1) echo 'BLOCKED: which file?'; exit 0;; T2) touch two.txt;; T3) touch three.txt;; T4) touch four.txt;; esac\necho TASK_COMPLETE",
        "",
    );
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    let statuses: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["blocked", "done", "done", "done"]);

    // Paused: what is under way finishes, nothing new starts.
    let p = project(FOUR, &format!("sleep 1\n{MAKE}"), "");
    let toml = p
        .read("agentloop.toml")
        .replace("workers = 4\n", "workers = 2\n");
    p.write("agentloop.toml", toml);
    p.commit("two workers");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "two agents", |p| {
        events(p)
            .iter()
            .filter(|e| e["kind"] == "iteration_started")
            .count()
            == 2
    });
    assert_eq!(p.run(&["pause"]).code, Some(0));
    wait_for(&p, "the two to finish", |p| {
        events(p)
            .iter()
            .filter(|e| e["kind"] == "iteration_finished")
            .count()
            == 2
    });
    std::thread::sleep(Duration::from_millis(1500));
    let started = events(&p)
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .count();
    assert_eq!(started, 2, "an iteration started while paused");
    assert_eq!(p.run(&["resume"]).code, Some(0));
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
    nothing_left(&p);
}

#[test]
fn a_usage_limit_holds_that_agents_workers_while_another_agents_go_on() {
    use crate::real_cli::{Cli, say};
    let cli = Cli::Claude;
    let server = cli.mock_lanes(vec![
        (
            "## Your task: T1 ".into(),
            vec![
                agentloop_testkit::Step::Error {
                    status: 429,
                    kind: "rate_limit_error".into(),
                    message: "This request would exceed your account's rate limit.".into(),
                    retry_after: Some(6),
                },
                cli.shell("echo T1 > t1.txt", 10, 1),
                say("TASK_COMPLETE", 10, 1, 0),
            ],
        ),
        (
            "## Your task: T4 ".into(),
            vec![
                cli.shell("echo T4 > t4.txt", 10, 1),
                say("TASK_COMPLETE", 10, 1, 0),
            ],
        ),
    ]);
    // The other agent's T2 ends only once claude's limit is hit (it reads the
    // journal), so its T3 starts inside the limit's 6 s however loaded the machine: a
    // fixed `sleep 2` against a 3 s limit raced claude's start in one CI run.
    let plan = "# Two accounts\n\n## T1: A\nVerify: test -f t1.txt\n\n## T2: B\nAgent: scripted\nVerify: test -f t2.txt\n\n## T3: C\nAgent: scripted\nVerify: test -f t3.txt\n\n## T4: D\nVerify: test -f t4.txt\n";
    let p = cli.project(
        &server,
        plan,
        "[agents.scripted]\ncommand = [\"sh\", \"-c\", \"p=$(cat); t=$(printf '%s\\\\n' \\\"$p\\\" | sed -n 's/^## Your task: T\\\\([0-9]\\\\) .*/\\\\1/p' | head -n 1); i=0; while [ $t = 2 ] && ! grep -q limit_hit \\\"$AGENTLOOP_RUN_DIR/journal.jsonl\\\" && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; touch t$t.txt; echo TASK_COMPLETE\"]\n\n[limits]\nwait = \"6s\"\n",
    );
    let toml = p
        .read("agentloop.toml")
        .replace("[run]\n", "[run]\nworkers = 2\n");
    p.write("agentloop.toml", toml);
    p.commit("two workers, two agents");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| ev.iter().position(pred);
    let started = |task: &'static str| {
        move |e: &serde_json::Value| e["kind"] == "iteration_started" && e["data"]["task"] == task
    };
    let hit = at(&|e| e["kind"] == "limit_hit" && e["data"]["agent"] == "claude").expect("a limit");
    let over = at(&|e| e["kind"] == "agent_limit_over").expect("the limit's end");
    let t3 = at(&started("T3")).unwrap();
    let t4 = at(&started("T4")).unwrap();
    assert!(
        hit < t3 && t3 < over,
        "the other agent's task went on meanwhile: {ev:?}"
    );
    assert!(t4 > over, "claude's other task waited: {ev:?}");
    let t1_again = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| started("T1")(e))
        .map(|(i, _)| i)
        .nth(1)
        .unwrap();
    assert!(t1_again > over);
    nothing_left(&p);
}

#[test]
fn two_surface_gates_at_once_ask_a_person_one_at_a_time() {
    // Both workers rewrite their own task's test: each change waits for a person, one
    // gate at a time (the two used to open each other in turn, without end).
    let plan =
        "# Two\n\n## T1: One\nVerify: sh tests/t1.sh\n\n## T2: Two\nVerify: sh tests/t2.sh\n";
    let p = Scratch::new()
        .plan(plan)
        .file("tests/t1.sh", "test -f one.txt\n")
        .file("tests/t2.sh", "test -f two.txt\n")
        .build();
    let agent = worker_agent(
        &p.path().join(".git/agent-state"),
        "case $task in T1) printf 'exit 0\\n' > tests/t1.sh ;; T2) printf 'exit 0\\n' > tests/t2.sh ;; esac\necho TASK_COMPLETE",
    );
    p.write("agent.sh", agent);
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\nworkers = 2\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n",
            p.path().join("agent.sh").display()
        ),
    );
    p.commit("a worker agent");
    let opened = |p: &Project| {
        events(p)
            .iter()
            .filter(|e| e["kind"] == "gate_opened")
            .count()
    };
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(opened(&p), 1, "one gate, and the run waits");
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "the other gate: {}", r.stderr);
    assert_eq!(opened(&p), 2);
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(opened(&p), 2);
    assert_eq!(p.status()["status"], "completed");
}

/// Live processes whose command line holds `needle`.
fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat.rsplit(')').next()?.trim_start().starts_with('Z');
            (!zombie && cmd.contains(needle)).then_some(cmd)
        })
        .collect()
}

#[test]
fn a_helper_that_hides_from_agentloop_ends_with_its_iteration() {
    // T1's agent leaves a helper in a new session with agentloop's variables taken
    // out of its environment (it used to live on, editing other worktrees, until the
    // run ended); T2 keeps the run going meanwhile.
    let p = project(
        "# Two\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n",
        "case $task in\n\
         T1) env -u AGENTLOOP_OWNER -u AGENTLOOP_RUN setsid sh -c 'exec sleep 41.75' > /dev/null 2>&1 < /dev/null &\n\
         touch one.txt ;;\n\
         T2) sleep 5; touch two.txt ;;\n\
         esac\necho TASK_COMPLETE",
        "",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    // (`status` may catch the run's journal before its first line: asked again.)
    wait_for(&p, "T1's iteration to end", |p| {
        let r = p.run(&["status", "--json"]);
        r.code == Some(0)
            && serde_json::from_str::<serde_json::Value>(&r.stdout)
                .is_ok_and(|s| s["tasks"][0]["status"] == "done")
    });
    let t = std::time::Instant::now();
    while !running("sleep 41.75").is_empty() && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running("sleep 41.75"), Vec::<String>::new());
    assert!(
        driver.try_wait().unwrap().is_none(),
        "the run still goes on (T2): the helper went with its own iteration"
    );
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(0)
    );
    assert_eq!(p.status()["status"], "completed");
}
