//! What a run accounts for: its cost budget and ceiling, what it needs from the
//! machine when it starts, and the record of progress a person reads later.

use crate::support::scripted;

const TWO_TASKS: &str = "# Two\n\n## T1: First\nVerify: test -f one.txt\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";

/// A run has a $25 cost budget unless it names one; over $100 needs `--force`, when it
/// starts and when a top-up would take it there.
#[test]
fn the_cost_budget_has_a_default_and_a_ceiling() {
    let p = scripted(TWO_TASKS, "touch one.txt two.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["config", "show"]);
    assert!(
        r.stdout.contains("budgets.max_cost_usd = 25.0"),
        "{}",
        r.stdout
    );
    let r = p.run(&["run", "--max-cost", "150"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("a cost budget of $150.00 is over the $100.00 ceiling"),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
    let r = p.run(&["run", "--max-cost", "90", "--step", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--budget", "+20", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("$110.00 is over"), "{}", r.stderr);
    let r = p.run(&["resume", "--budget", "+20", "--force", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

/// An iteration budget has a ceiling too: over 10 per task (and over 500) needs
/// `--force`, when the run starts, in hook mode, and when a top-up would take it there.
#[test]
fn the_iteration_budget_has_a_ceiling() {
    let p = scripted(TWO_TASKS, "touch one.txt two.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run", "--max-iterations", "5000"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "an iteration budget of 5000 is over the ceiling of 500 for 2 tasks (10 per task, at least 500)"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("pass --force"), "{}", r.stderr);
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
    p.write(
        "PLAN.md",
        format!("---\nbudgets:\n  max_iterations: 501\n---\n{TWO_TASKS}"),
    );
    let r = p.run(&["hook", "start"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("budget of 501 is over"), "{}", r.stderr);
    p.write("PLAN.md", TWO_TASKS);
    let r = p.run(&["run", "--max-iterations", "500", "--step", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--iterations", "+1", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("budget of 501 is over"), "{}", r.stderr);
    let r = p.run(&["resume", "--iterations", "+1", "--force", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

/// What the run needs from the machine is looked at when its driver starts: a check
/// whose program is not installed is named before any iteration, and `status` says so.
#[test]
fn prerequisites_are_recorded_and_shown_when_the_run_starts() {
    let p = scripted(
        "# Tools\n\n## T1: a\nVerify: test -f a.txt\n\n## T2: b\nDepends: T1\nVerify: surely-not-installed-xyz --check\n",
        "touch a.txt\necho TASK_COMPLETE\n",
    );
    p.write("notes.txt", "mine, not committed\n");
    let r = p.run(&["run", "--no-wait", "--max-iterations", "3"]);
    assert!(
        r.stderr.contains(
            "warning: not found on this machine: surely-not-installed-xyz (T2: surely-not-installed-xyz --check)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("the tree has 1 change uncommitted when the run starts (notes.txt)"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["prerequisites"]["git"], true);
    assert_eq!(s["prerequisites"]["dirty_count"], 1);
    let human = p.run(&["status"]).stdout;
    assert!(
        human.contains("prerequisites: git work tree · 1 change uncommitted at start · missing: surely-not-installed-xyz"),
        "{human}"
    );
}

/// progress.md keeps what the seed's log keeps: each completion with its time and
/// duration (a list that only grows, even when a task is reopened), when each learning
/// came, and the commits the agent made itself.
#[test]
fn progress_keeps_completions_learnings_and_the_agents_own_commits() {
    let p = scripted(
        &TWO_TASKS.replace(
            "Verify: test -f two.txt",
            "Verify: test -f two.txt\nGate: after",
        ),
        r#"case $task in
  T1) touch one.txt; git add one.txt; git -c user.name=a -c user.email=a@a commit -qm "agent's own" ;;
  T2) touch two.txt ;;
esac
echo 'LEARNING: the build wants TZ=UTC'
echo TASK_COMPLETE
"#,
    );
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let progress = std::fs::read_to_string(p.run_dir().join("progress.md")).unwrap();
    let own = crate::real_cli::journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "agent_finished")
        .and_then(|e| {
            e["data"]["head_after"]
                .as_str()
                .map(|h| h[..12].to_string())
        })
        .unwrap();
    assert!(
        progress.contains(&format!("the agent's own commits up to {own}")),
        "{progress}"
    );
    assert!(
        progress.contains("- the build wants TZ=UTC (20"),
        "{progress}"
    );
    // Reopened by a reviewer, T2 is done again: the list keeps both completions.
    assert_eq!(p.run(&["reject", "--note", "again"]).code, Some(0));
    let r = p.run(&["resume", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let progress = std::fs::read_to_string(p.run_dir().join("progress.md")).unwrap();
    assert_eq!(progress.matches("- [x] T2: ").count(), 2, "{progress}");
    assert_eq!(progress.matches("- [x] T1: ").count(), 1, "{progress}");
}
