//! What a run tells others, in Markdown made from its state: the pull request's body
//! (the tasks with the evidence that verified each, cost, breakers, gates, the
//! verdict) and the handoff written when the run ends (what was built, what was left,
//! open questions, cost, links).

use std::fmt::Write;

use crate::state::RunState;
use crate::task::TaskStatus;
use agentloop_ground::words::{money, plural};

/// The tasks (those in `only`, when given), each with what verified it.
fn tasks(s: &RunState, only: Option<&[String]>, out: &mut String) {
    for t in s
        .tasks
        .iter()
        .filter(|t| only.is_none_or(|o| o.contains(&t.id)))
    {
        let plan = s.plan_task(&t.id);
        let checks: Vec<String> = plan
            .map(|p| {
                s.plan
                    .checks(&p.id)
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect()
            })
            .unwrap_or_default();
        let evidence = match (&t.status, t.completed_iteration) {
            (TaskStatus::Done, Some(i)) if checks.is_empty() => {
                format!("done in iteration {i}")
            }
            (TaskStatus::Done, Some(i)) => {
                format!("verified by {} in iteration {i}", checks.join(", "))
            }
            (TaskStatus::Done, None) => "done".to_string(),
            (TaskStatus::Skipped, _) => match &t.skip_reason {
                Some(r) => format!("skipped: {r}"),
                None => "skipped".to_string(),
            },
            (TaskStatus::Blocked, _) => format!(
                "blocked: {}",
                t.blocked.as_deref().unwrap_or("waiting for a person")
            ),
            (other, _) => other.as_str().to_string(),
        };
        let commit = t
            .commit
            .as_deref()
            .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- [{}] **{}** {} — {evidence} ({}, {}{commit})",
            if t.status == TaskStatus::Done {
                "x"
            } else {
                " "
            },
            t.id,
            t.title,
            plural(t.tries as usize, "attempt", "attempts"),
            money(t.cost_usd)
        );
        if let Some(e) = crate::evidence::task_evidence(s, t) {
            let _ = writeln!(out, "  - tests: {}", tests_words(&e));
        }
    }
}

/// A task's per-test evidence in a line: FAIL_TO_PASS with the named tests, and
/// PASS_TO_PASS.
fn tests_words(e: &crate::evidence::TaskEvidence) -> String {
    if e.exit_code_only {
        return e.words();
    }
    const SHOWN: usize = 5;
    let mut named: Vec<String> = e
        .tests
        .iter()
        .take(SHOWN)
        .map(|r| format!("`{}`", r.id))
        .collect();
    if e.tests.len() > SHOWN {
        named.push(format!("{} more", e.tests.len() - SHOWN));
    }
    let f2p = if e.named == 0 {
        "no named tests".to_string()
    } else {
        format!(
            "FAIL_TO_PASS {}/{} ({})",
            e.named_passing,
            e.named,
            named.join(", ")
        )
    };
    let p2p = match e.regressions.len() {
        0 => "PASS_TO_PASS: no regressions".to_string(),
        n => format!("PASS_TO_PASS: {}", plural(n, "regression", "regressions")),
    };
    format!("{f2p}; {p2p}")
}

/// The breakers that tripped and the gates passed, from the tasks' records.
fn trips(s: &RunState, out: &mut String) {
    let breakers: Vec<String> = s
        .tasks
        .iter()
        .filter(|t| t.blocked_by_breaker)
        .map(|t| format!("{} ({})", t.id, t.blocked.as_deref().unwrap_or("")))
        .collect();
    let _ = writeln!(
        out,
        "- Breakers tripped: {}",
        if breakers.is_empty() {
            "none".to_string()
        } else {
            breakers.join("; ")
        }
    );
    let mut gates = Vec::new();
    if s.plan_approved {
        gates.push("plan approval".to_string());
    }
    if s.plan_reviewed {
        gates.push("the plan's review".to_string());
    }
    for t in &s.tasks {
        if t.gate_before_approved {
            gates.push(format!("before {}", t.id));
        }
    }
    if s.final_approved {
        gates.push("final review".to_string());
    }
    // The diff gates released: by a person here, or a reviewer on the forge.
    for g in &s.ship.passed {
        gates.push(format!("the {g} review"));
    }
    // Every gate a person approved (the reviews after each task, the diff gates'),
    // as the approvals name them.
    for a in &s.approvals {
        let what = a.rsplit_once(" by ").map_or(a.as_str(), |(w, _)| w);
        if !gates.iter().any(|g| g == what) {
            gates.push(what.to_string());
        }
    }
    let _ = writeln!(
        out,
        "- Gates passed: {}",
        if gates.is_empty() {
            "none".to_string()
        } else {
            gates.join(", ")
        }
    );
    if !s.approvals.is_empty() {
        let _ = writeln!(out, "- Approved: {}", s.approvals.join("; "));
    }
    if !s.skills_skipped.is_empty() {
        let skipped: Vec<String> = (s.skills_skipped.iter())
            .map(|(name, why)| format!("{name} ({why})"))
            .collect();
        let _ = writeln!(out, "- Required skills skipped: {}", skipped.join("; "));
    }
}

/// The pull request's body.
pub fn pr_body(s: &RunState) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", s.plan.title);
    if !s.plan.goal.is_empty() {
        let _ = writeln!(out, "{}\n", s.plan.goal);
    }
    let _ = writeln!(
        out,
        "Made by agentloop run `{}`: {} of {} verified by agentloop itself, {}, {}.\n",
        s.run_id,
        s.done_count(),
        plural(s.tasks.len(), "task", "tasks"),
        plural(s.iterations as usize, "iteration", "iterations"),
        money(s.cost_usd)
    );
    out.push_str("### Tasks\n\n");
    tasks(s, None, &mut out);
    crate::summary::review_section(s, "###", &mut out);
    out.push_str("\n### The run\n\n");
    trips(s, &mut out);
    let _ = writeln!(
        out,
        "- Verdict: {}",
        if s.tasks.iter().all(|t| t.status == TaskStatus::Done) {
            "every task done and verified; the forge's checks and a review decide the rest"
        } else {
            "not every task is done (see above)"
        }
    );
    if s.ship.fixes > 0 {
        let _ = writeln!(
            out,
            "- Red checks handed back to the agent: {}",
            s.ship.fixes
        );
    }
    out
}

/// `pr = "task"`: the body of the pull request of the unit being shipped — its task
/// and the fixes its checks asked for, and where it sits among the run's others.
pub fn unit_pr_body(s: &RunState) -> String {
    let Some(u) = &s.ship.unit else {
        return pr_body(s);
    };
    let mut out = String::new();
    if let Some(p) = s.plan_task(&u.task) {
        let _ = writeln!(out, "## {}: {}\n", p.id, p.title);
        if !p.body.trim().is_empty() {
            let _ = writeln!(out, "{}\n", p.body.trim());
        }
    }
    let _ = writeln!(
        out,
        "Made by agentloop run `{}` (\"{}\"): one pull request per task, this is the {}.\n",
        s.run_id,
        s.plan.title,
        ordinal(s.ship.shipped.len() + 1)
    );
    if let Some(prev) = s.ship.shipped.iter().rev().find(|p| p.branch == u.base) {
        let _ = writeln!(
            out,
            "Stacked on {} (`{}`): review and merge that one first.\n",
            prev.pr
                .as_ref()
                .map_or(prev.task.clone(), |(n, _)| format!("#{n} ({})", prev.task)),
            prev.branch
        );
    }
    out.push_str("### Task\n\n");
    tasks(s, Some(&u.tasks), &mut out);
    out.push_str("\n### The run\n\n");
    trips(s, &mut out);
    out
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The handoff written when the run ends.
pub fn handoff(s: &RunState) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Handoff: {}\n", s.plan.title);
    let _ = writeln!(
        out,
        "Run `{}` ended **{}**{}: {} of {}, {}, {}.\n",
        s.run_id,
        s.status.as_str(),
        s.finished
            .as_ref()
            .map(|r| format!(" ({})", r.describe()))
            .unwrap_or_default(),
        s.done_count(),
        plural(s.tasks.len(), "task", "tasks"),
        plural(s.iterations as usize, "iteration", "iterations"),
        money(s.cost_usd)
    );
    out.push_str("## What was built\n\n");
    tasks(s, None, &mut out);
    out.push_str("\n## Deferred or skipped\n\n");
    let left: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Done)
        .collect();
    if left.is_empty() {
        out.push_str("(nothing)\n");
    }
    for t in left {
        let _ = writeln!(
            out,
            "- {} {}: {}{}",
            t.id,
            t.title,
            t.status.as_str(),
            t.skip_reason
                .as_deref()
                .or(t.blocked.as_deref())
                .map(|b| format!(" — {b}"))
                .unwrap_or_default()
        );
    }
    out.push_str("\n## Open questions\n\n");
    let questions: Vec<_> = s
        .tasks
        .iter()
        .filter_map(|t| t.question.as_ref().map(|q| (t, q)))
        .collect();
    if questions.is_empty() {
        out.push_str("(none)\n");
    }
    let asked = questions.len();
    for (t, q) in questions {
        let _ = writeln!(out, "- {}: {q}", t.id);
    }
    // The follow-ups offered as tracker issues.
    let follow_ups = s
        .tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Done)
        .count()
        + asked;
    if follow_ups > 0
        && let Some(source) = s.settings.tracker.source.as_deref()
    {
        let _ = writeln!(
            out,
            "\n{} {}: `agentloop handoff --to-issues` files them on {source} (each once; `--dry-run` shows them first).",
            follow_ups,
            if follow_ups == 1 {
                "follow-up"
            } else {
                "follow-ups"
            }
        );
    }
    if !s.learnings.is_empty() {
        out.push_str("\n## Learnings\n\n");
        for l in &s.learnings {
            let _ = writeln!(out, "- {l}");
        }
    }
    out.push_str("\n## Links\n\n");
    let mut any = false;
    if let Some(i) = &s.integration {
        let how = if i.landed {
            "landed on your branch".to_string()
        } else {
            "`agentloop land` takes it onto your branch".to_string()
        };
        let _ = writeln!(
            out,
            "- The work: branch `{}` at {} (every commit verified); {how}",
            i.branch,
            &i.head[..i.head.len().min(10)]
        );
        any = true;
    }
    for u in &s.ship.shipped {
        let what = match (&u.pr, &u.merged) {
            (Some((n, url)), Some(m)) => format!("pull request #{n}: {url}, merged as {m}"),
            (Some((n, url)), None) => format!("pull request #{n}: {url}"),
            (None, _) => "nothing to propose: already on the base branch".to_string(),
        };
        let _ = writeln!(out, "- {}: {what}", u.task);
        any = true;
    }
    if let Some((n, url)) = s.ship.pr.as_ref().filter(|_| s.ship.shipped.is_empty()) {
        let _ = writeln!(out, "- Pull request #{n}: {url}");
        any = true;
    }
    if let Some(c) = s.ship.merged.as_ref().filter(|_| s.ship.shipped.is_empty()) {
        let _ = writeln!(out, "- Merged as {c}");
        any = true;
    }
    if let Some((c, _)) = s.ship.pushed.as_ref().filter(|_| s.ship.shipped.is_empty()) {
        let _ = writeln!(out, "- Pushed {c}");
        any = true;
    }
    for t in s.tasks.iter().filter(|t| t.commit.is_some()) {
        let _ = writeln!(
            out,
            "- {}: commit {}",
            t.id,
            t.commit.as_deref().unwrap_or("")
        );
        any = true;
    }
    if !any {
        out.push_str("(none)\n");
    }
    let checkpoints: Vec<_> = s
        .tasks
        .iter()
        .flat_map(|t| t.checkpoints.iter().map(move |c| (t, c)))
        .collect();
    if !checkpoints.is_empty() {
        out.push_str(
            "\n## Checkpoints (class 2B tasks: to roll back)\n\nThe tree after each iteration, as a commit; `git checkout COMMIT -- .` puts it back (`agentloop gc` removes them once the run is over).\n\n",
        );
        for (t, (iteration, commit)) in checkpoints {
            let _ = writeln!(out, "- {} after iteration {iteration}: `{commit}`", t.id);
        }
    }
    out.push_str("\n## The run\n\n");
    trips(s, &mut out);
    out
}
