//! Planners (`[run] planners`): when one is asked for new tasks, what it is told, and
//! how its answer is judged before anything of it joins the plan.
//!
//! A planner is asked when the run has moved since the last one was (a task settled:
//! done, blocked or skipped), the plan's open tasks no longer keep the workers busy
//! (fewer than two per worker), and a planner is free; once one found nothing to add,
//! only a new setback (a task blocked or skipped) or the plan's end asks again.
//!
//! Its proposal is refused whole when a task of it is not new, names no check or
//! only checks that cannot fail (`true`, `echo`, `… || true`), names no test
//! (`Tests:`) and no held-out check (`Holdout:`), repeats a task that is done or still
//! to do (the same checks, tests and held-out checks), or makes a plan that does not
//! validate; then, run on the tree as it stands, when a test it names already passes
//! or is only skipped, is reported by no check and not marked `(new)`, or nothing it
//! names fails ([`refused_as_it_stands`]). A refused proposal is asked
//! for again, with the reason, at most twice in a row.

use agentloop_journal::{Planned, RunState, TaskStatus};
use agentloop_plan::Plan;

use super::ladder::budget_reached;

mod checks;

pub use checks::{AsItStands, refused_as_it_stands};

/// The line a planner's answer of new tasks starts with, and the one it ends with.
pub const START: &str = "NEW_TASKS";
pub const END: &str = "END_NEW_TASKS";
/// A planner's answer when the goal needs nothing more.
pub const NOTHING: &str = "NO_NEW_TASKS";
/// Tasks one proposal may add.
pub const MAX_TASKS: usize = 20;

/// What the run stands at, as far as planning goes: how many tasks settled, and how
/// (the plan's growth itself is no news).
pub fn basis(s: &RunState) -> String {
    format!("{} done, {}", count(s, TaskStatus::Done), setbacks(s))
}

/// The part of the basis that says what went wrong: after a planner found nothing to
/// add, only a new setback — or the end of the plan — asks again.
fn setbacks(s: &RunState) -> String {
    format!(
        "{} blocked, {} skipped",
        count(s, TaskStatus::Blocked),
        count(s, TaskStatus::Skipped)
    )
}

fn count(s: &RunState, status: TaskStatus) -> usize {
    s.tasks.iter().filter(|t| t.status == status).count()
}

/// The planner to ask now, and the basis it is asked at; `None` when none is due.
pub(super) fn due(s: &RunState) -> Option<(u32, String)> {
    let n = s.settings.planners;
    if n == 0
        || s.planning.proposal.is_some()
        || s.budget_spent.is_some()
        || budget_reached(s).is_some()
    {
        return None;
    }
    let basis = basis(s);
    if s.planning.basis.as_deref() == Some(basis.as_str()) {
        return None;
    }
    let open = s.tasks.iter().filter(|t| !t.status.is_settled()).count();
    if open > 0 && s.planning.quiet_at.as_deref() == Some(setbacks(s).as_str()) {
        return None;
    }
    if open >= 2 * s.settings.workers.max(1) as usize {
        return None;
    }
    let free = (1..=n).find(|p| !s.planning.at_work.contains(p))?;
    Some((free, basis))
}

/// What planner `planner` is told.
pub fn prompt(s: &RunState, planner: u32) -> String {
    let mut out = format!("# Planning: {}\n\n", s.plan.title);
    out.push_str(&format!(
        "You are planner {planner} of {} of an agentloop run. Workers do the plan's tasks, each verified by its checks; your part is to propose the next tasks its goal needs. You work in a throwaway copy of the work so far: read it, run what helps you understand it; what you change there is thrown away.\n\n",
        s.settings.planners
    ));
    out.push_str("## Goal\n\n");
    out.push_str(if s.plan.goal.trim().is_empty() {
        &s.plan.title
    } else {
        s.plan.goal.trim()
    });
    out.push_str("\n\n");
    out.push_str(&format!(
        "## The plan so far (version {})\n\n",
        s.plan_version
    ));
    if s.plan.tasks.is_empty() {
        out.push_str("No task yet.\n");
    }
    for t in &s.plan.tasks {
        let state = s.task(&t.id);
        let status = state.map_or("pending", |st| st.status.as_str());
        out.push_str(&format!("- {}: {} [{status}]", t.id, t.title));
        if !t.depends.is_empty() {
            out.push_str(&format!(" (depends on {})", t.depends.join(", ")));
        }
        out.push('\n');
        for v in &t.verify {
            out.push_str(&format!("  - Verify: {v}\n"));
        }
        if !t.tests.is_empty() {
            let names: Vec<&str> = t.tests.iter().map(|n| n.pattern.as_str()).collect();
            out.push_str(&format!("  - Tests: {}\n", names.join(", ")));
        }
        if !t.holdout.is_empty() {
            out.push_str(&format!("  - Holdout: {}\n", t.holdout.join(", ")));
        }
        if let Some(why) = state.and_then(|st| st.blocked.as_deref()) {
            out.push_str(&format!("  - blocked: {}\n", first_line(why)));
        } else if let Some(last) = state
            .filter(|st| !st.status.is_settled())
            .and_then(|st| st.last_digest.as_deref())
        {
            out.push_str(&format!("  - last failure: {}\n", first_line(last)));
        }
    }
    if !s.planning.refused.is_empty() {
        out.push_str("\n## Refused before\n\n");
        for r in &s.planning.refused {
            out.push_str(&format!("- {r}\n"));
        }
    }
    if !s.steer.is_empty() {
        out.push_str("\n## Notes from people\n\n");
        for n in &s.steer {
            out.push_str(&format!("- {n}\n"));
        }
    }
    let taken: Vec<&str> = s.plan.ids();
    out.push_str(&format!(
        "\n## What to answer\n\nPropose tasks that are not in the plan, in the plan's own format: each a heading `## T<n>: <title>` with an id not taken{}, a line `Verify: <command>` that runs the tests, a line `Tests: <test>, <test>` naming the tests (as the test runner reports them) that must go from failing, or not existing yet (marked `(new)`: `Tests: tests/test_x.py::test_y (new)`), to passing once the task is done, and `Depends: T<n>` where it needs another task done first. Before a task joins the plan its checks run on the work as it stands: a task without `Tests:` (or a held-out check, `Holdout: <name>`), one whose named tests already pass or are only skipped, one naming a test its checks do not report that is not marked `(new)`, one whose check gives no per-test report, and a copy of a task in the plan (the same checks and tests) are refused, and you are told why. A script a check runs that is not in the tree yet is held for a person when the task's agent writes it. At most {MAX_TASKS} tasks, small enough for one agent each. Write them between a line `{START}` and a line `{END}`. If the goal needs nothing more, answer `{NOTHING}` alone.\n",
        if taken.is_empty() {
            String::new()
        } else {
            format!(" (taken: {})", taken.join(", "))
        }
    ));
    out
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// What becomes of a planner's answer `text` (its final message), as written: what it
/// proposes is then held to its checks on the tree as it stands
/// ([`refused_as_it_stands`]) before it joins the plan.
pub fn review(s: &RunState, text: &str) -> Planned {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines.iter().rposition(|l| l.trim() == START);
    let Some(start) = start else {
        return if lines.iter().any(|l| l.trim() == NOTHING) {
            Planned::Nothing
        } else {
            Planned::Failed {
                reason: format!("the answer has neither `{START}` … `{END}` nor `{NOTHING}`"),
            }
        };
    };
    let Some(len) = lines[start + 1..].iter().position(|l| l.trim() == END) else {
        return Planned::Refused {
            reason: format!("`{START}` is not closed by a line `{END}`"),
        };
    };
    let block = lines[start + 1..start + 1 + len].join("\n");
    let refuse = |reason: String| Planned::Refused { reason };
    let proposed = match Plan::parse_unchecked(START, &format!("# new tasks\n\n{block}\n")) {
        Ok(p) => p,
        Err(e) => return refuse(e.located()),
    };
    if proposed.tasks.is_empty() {
        return Planned::Nothing;
    }
    if proposed.tasks.len() > MAX_TASKS {
        return refuse(format!(
            "{} tasks at once; at most {MAX_TASKS}",
            proposed.tasks.len()
        ));
    }
    if let Some(reason) = proposed
        .tasks
        .iter()
        .find_map(|t| checks::refused_as_written(s, &proposed.tasks, t))
    {
        return refuse(reason);
    }
    let mut plan = s.plan.clone();
    plan.tasks.extend(proposed.tasks.iter().cloned());
    if let Err(e) = plan.validate(START) {
        return refuse(e.located());
    }
    let added: Vec<String> = proposed.tasks.iter().map(|t| t.id.clone()).collect();
    if s.settings.gates.new_tasks {
        Planned::Proposed {
            tasks: proposed.tasks,
        }
    } else {
        Planned::Added {
            version: s.plan_version + 1,
            plan,
            added,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(plan: &str, planners: u32) -> RunState {
        let mut settings = agentloop_config::Settings::from_config(&Default::default());
        settings.planners = planners;
        agentloop_journal::testing::created(plan, settings)
    }

    const ONE: &str = "# Grow\n\nA calculator.\n\n## T1: Add\nVerify: sh t.sh\nTests: add\n";

    #[test]
    fn new_tasks_join_the_plan_and_what_is_not_new_or_unchecked_is_refused() {
        let s = state(ONE, 1);
        let answer = "Here is my plan.\nNEW_TASKS\n## T2: Subtract\nVerify: sh t.sh\nTests: sub\nDepends: T1\n\n## T3: Multiply\nVerify: sh t.sh\nTests: mul\nEND_NEW_TASKS\n";
        match review(&s, answer) {
            Planned::Added {
                version,
                plan,
                added,
            } => {
                assert_eq!(version, s.plan_version + 1);
                assert_eq!(added, ["T2", "T3"]);
                assert_eq!(plan.ids(), ["T1", "T2", "T3"]);
            }
            other => panic!("{other:?}"),
        }
        let again = "NEW_TASKS\n## T1: Add again\nVerify: true\nEND_NEW_TASKS";
        assert!(
            matches!(review(&s, again), Planned::Refused { reason } if reason.contains("T1 is already in the plan"))
        );
        let unchecked = "NEW_TASKS\n## T2: Something\nDo it.\nEND_NEW_TASKS";
        assert!(
            matches!(review(&s, unchecked), Planned::Refused { reason } if reason.contains("names no check"))
        );
        for weak in [
            "true",
            "exit 0",
            "echo ok",
            "pytest -q || true",
            "sh t.sh; exit 0",
        ] {
            let answer = format!("NEW_TASKS\n## T2: Later\nVerify: {weak}\nEND_NEW_TASKS");
            assert!(
                matches!(review(&s, &answer), Planned::Refused { reason } if reason.contains("cannot fail")),
                "{weak}"
            );
        }
        // A check's exit code alone, the whole suite with no test named, and a copy of
        // a task that is there already tell nothing.
        for (weak, why) in [
            ("Verify: test 1 = 1", "names no test"),
            ("Verify: pytest -q", "names no test"),
            ("Verify: sh t.sh\nTests: add", "T2 is T1 again"),
            ("Tests: sub", "no check that runs them"),
        ] {
            let answer = format!("NEW_TASKS\n## T2: Later\n{weak}\nEND_NEW_TASKS");
            assert!(
                matches!(review(&s, &answer), Planned::Refused { ref reason } if reason.contains(why)),
                "{weak}: {:?}",
                review(&s, &answer)
            );
        }
        let twice = "NEW_TASKS\n## T2: A\nVerify: sh t.sh\nTests: sub\n\n## T3: B\nVerify: sh t.sh\nTests: sub\nEND_NEW_TASKS";
        assert!(
            matches!(review(&s, twice), Planned::Refused { reason } if reason.contains("T3 is T2 again") && reason.contains("proposed with it"))
        );
        // A held-out check tells, with or without names.
        let held = "NEW_TASKS\n## T2: Later\nVerify: sh t.sh\nHoldout: div\nEND_NEW_TASKS";
        assert!(matches!(review(&s, held), Planned::Added { .. }));
        let dangling =
            "NEW_TASKS\n## T2: Later\nVerify: sh t.sh\nTests: later\nDepends: T9\nEND_NEW_TASKS";
        assert!(matches!(review(&s, dangling), Planned::Refused { .. }));
        assert_eq!(review(&s, "All done.\nNO_NEW_TASKS\n"), Planned::Nothing);
        assert!(matches!(review(&s, "I think so."), Planned::Failed { .. }));
        assert!(matches!(
            review(&s, "NEW_TASKS\n## T2: x\nVerify: true\n"),
            Planned::Refused { .. }
        ));
    }

    #[test]
    fn with_the_new_tasks_gate_a_proposal_waits_for_a_person() {
        let mut s = state(ONE, 1);
        s.settings.gates.new_tasks = true;
        let answer = "NEW_TASKS\n## T2: Subtract\nVerify: sh t.sh\nTests: sub\nEND_NEW_TASKS";
        assert!(matches!(review(&s, answer), Planned::Proposed { tasks } if tasks.len() == 1));
    }

    #[test]
    fn a_planner_is_asked_once_per_basis_while_the_backlog_is_short() {
        let mut s = state(ONE, 2);
        let (p, basis) = due(&s).expect("due at the start");
        assert_eq!(p, 1);
        s.planning.basis = Some(basis.clone());
        s.planning.at_work.insert(1);
        assert_eq!(due(&s), None, "nothing moved since");
        s.tasks[0].status = agentloop_journal::TaskStatus::Done;
        let (p, next) = due(&s).expect("a task settled");
        assert_eq!(p, 2, "planner 1 is at work");
        assert_ne!(next, basis);
        s.settings.planners = 0;
        assert_eq!(due(&s), None);
    }

    #[test]
    fn the_prompt_says_the_goal_the_plan_and_the_answers_format() {
        let s = state(ONE, 1);
        let p = prompt(&s, 1);
        for want in [
            "A calculator",
            "T1: Add [pending]",
            "Verify: sh t.sh",
            "Tests: add",
            START,
            END,
            NOTHING,
            "taken: T1",
        ] {
            assert!(p.contains(want), "{want}: {p}");
        }
    }
}
