//! The ship flow's decisions, once every task is settled: push the work, open or update
//! the pull request, wait for the forge's checks (a red one becomes a fix task for the
//! agent, up to `fix_attempts`), wait for the review, merge (`merge = "auto"`), and
//! verify the base branch after the merge. Pure, like the rest of the policy.

use agentloop_journal::{Event, FinishReason, Gate, RunState, RunStatus, TaskStatus};
use agentloop_plan::Task;

use crate::action::{Action, ShipStep};

/// A task done whose change is committed: work there is to ship.
fn committed(t: &agentloop_journal::TaskState) -> bool {
    t.status == TaskStatus::Done && t.commit.is_some()
}

/// `pr = "task"`: the task to ship next — a fix the base branch needs after a merge,
/// else the first done task in the plan's order whose change is committed and not
/// shipped yet (a fix for red checks ships with the task it was made for).
pub fn next_unit(s: &RunState) -> Option<&str> {
    let done = |id: &str| s.task(id).is_some_and(committed) && !s.ship.has(id);
    if let Some(t) = s.ship.urgent.iter().find(|t| done(t)) {
        return Some(t);
    }
    s.plan
        .tasks
        .iter()
        .map(|t| t.id.as_str())
        .find(|&id| done(id))
}

/// What shipping asks for next; `None` when it has nothing (more) to do.
pub(super) fn next(s: &RunState) -> Option<Action> {
    let cfg = &s.settings.ship;
    if !cfg.enabled() {
        return None;
    }
    if let Some(why) = &s.ship.failed {
        return Some(Action::Record(Event::GateOpened {
            gate: Gate::Ship(why.clone()),
        }));
    }
    if cfg.pr == agentloop_config::PrScope::Task {
        let Some(unit) = &s.ship.unit else {
            return next_unit(s).map(|_| Action::Ship(ShipStep::StartUnit));
        };
        // A unit through goes into `shipped`; the next one starts.
        return Some(flow(s).unwrap_or_else(|| {
            Action::Record(Event::TaskShipped {
                task: unit.task.clone(),
                empty: false,
            })
        }));
    }
    flow(s)
}

/// The steps of one pull request: the run's, or one task's.
fn flow(s: &RunState) -> Option<Action> {
    let cfg = &s.settings.ship;
    let ship = &s.ship;
    // The work to push: anything done since the last push (a fix) is pushed again.
    let Some((pushed, at)) = &ship.pushed else {
        // Nothing is proposed that adds nothing: first, the committed work of a task
        // (a run whose tasks were all skipped or blocked ships nothing); with one pull
        // request for the run, merged and then red on the base branch, the fix's (one
        // skipped or blocked would propose the merged work again).
        let new_work = match (cfg.pr, &ship.pr) {
            (agentloop_config::PrScope::Run, Some(_)) => ship
                .fix_tasks
                .last()
                .and_then(|id| s.task(id))
                .is_some_and(committed),
            _ => s.tasks.iter().any(committed),
        };
        return new_work.then_some(Action::Ship(ShipStep::Push));
    };
    if s.iterations > *at {
        return Some(Action::Ship(ShipStep::Push));
    }
    // Opened for the first push, its account written again for each later one.
    if ship.pr_for.as_ref() != Some(pushed) {
        return Some(Action::Ship(ShipStep::OpenPr));
    }
    match &ship.checks {
        Some((commit, passed)) if commit == pushed => {
            if !passed {
                return Some(fix_or_fail(s, false));
            }
        }
        _ => return Some(Action::Ship(ShipStep::AwaitChecks)),
    }
    if ship.diff_for.as_ref() != Some(pushed) {
        return Some(Action::Ship(ShipStep::CheckDiffGates));
    }
    for name in super::diffgates::ORDER {
        if ship.triggered.iter().any(|t| t.gate == name) && !ship.gates_approved.contains(name) {
            return Some(Action::Record(Event::GateOpened {
                gate: Gate::Diff(name.into()),
            }));
        }
    }
    if let Some(release) = release(s) {
        return Some(release);
    }
    if !ship.approved {
        return Some(Action::Record(Event::GateOpened { gate: Gate::Review }));
    }
    if cfg.merge == agentloop_config::MergeWhen::Manual {
        return None;
    }
    let Some(merged) = &ship.merged else {
        if s.settings.gates.deploy.enabled && !ship.gates_approved.contains("deploy") {
            return Some(Action::Record(Event::GateOpened {
                gate: Gate::Diff("deploy".into()),
            }));
        }
        return Some(release(s).unwrap_or(Action::Ship(ShipStep::Merge)));
    };
    match ship.post_merge {
        None => Some(Action::Ship(ShipStep::PostMergeVerify)),
        Some(true) => None,
        Some(false) => Some(match cfg.after_merge_failure {
            agentloop_config::AfterMergeFailure::Fix => fix_or_fail(s, true),
            agentloop_config::AfterMergeFailure::Block => Action::Record(Event::GateOpened {
                gate: Gate::Ship(format!(
                    "the run's checks fail on the base branch after the merge ({merged:.12}); approve verifies again"
                )),
            }),
        }),
    }
}

/// The pull request labelled for a diff gate a person or a reviewer has released
/// since: its label comes off and its account says the gate passed, before anyone
/// merges it.
fn release(s: &RunState) -> Option<Action> {
    (!to_release(s).is_empty()).then_some(Action::Ship(ShipStep::ReleaseGates))
}

/// The diff gates whose labels the pull request bears and a person or a reviewer has
/// released: the triggered ones, and `deploy` when agentloop merges.
pub fn to_release(s: &RunState) -> Vec<String> {
    let ship = &s.ship;
    if ship.pr.is_none() {
        return Vec::new();
    }
    let deploy = s.settings.gates.deploy.enabled
        && s.settings.ship.merge == agentloop_config::MergeWhen::Auto;
    let gates: std::collections::BTreeSet<String> = ship
        .triggered
        .iter()
        .map(|t| t.gate.as_str())
        .chain(deploy.then_some("deploy"))
        .filter(|g| ship.gates_approved.contains(*g) && !ship.released.contains(*g))
        .map(String::from)
        .collect();
    gates.into_iter().collect()
}

/// A red check (or a failed verification after the merge): a new task that hands the
/// failures to the agent, or the end of the run when the fixes are used up.
fn fix_or_fail(s: &RunState, after_merge: bool) -> Action {
    let cfg = &s.settings.ship;
    if s.ship.fixes >= cfg.fix_attempts {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Failed,
            reason: FinishReason::Error {
                message: format!(
                    "the forge's checks still fail after {} fix{}",
                    s.ship.fixes,
                    if s.ship.fixes == 1 { "" } else { "es" }
                ),
            },
        });
    }
    let n = s.ship.fixes + 1;
    let id = if after_merge {
        format!("MAIN-{n}")
    } else {
        format!("CI-{n}")
    };
    let mut plan = s.plan.clone();
    plan.tasks.push(Task {
        id: id.clone(),
        title: if after_merge {
            "Make the run's checks pass on the base branch".into()
        } else {
            "Make the forge's checks pass".into()
        },
        body: if after_merge {
            "The pull request was merged, and the run's checks then failed on the base branch (work merged there meanwhile breaks them). The failures are in \"Last attempt failed\" below. Fix the cause in the code, then say TASK_COMPLETE; agentloop ships the fix as a new pull request.".into()
        } else {
            "The pull request's checks failed on the pushed work. The failures are in \"Last attempt failed\" below, as the forge reported them. Fix the cause in the code (not the checks), then say TASK_COMPLETE; agentloop pushes again and waits for the checks.".into()
        },
        acceptance: Vec::new(),
        // The run's own checks still run locally; the forge's decide after the push.
        verify: Vec::new(),
        tests: Vec::new(),
        holdout: Vec::new(),
        depends: s.plan.tasks.iter().map(|t| t.id.clone()).collect(),
        gate: None,
        agent: None,
        mode: None,
        scope: Vec::new(),
        max_iterations: None,
        milestone: false,
        reversibility: None,
        must_not: Vec::new(),
        criteria: Vec::new(),
        line: 0,
    });
    Action::Record(Event::ShipFixAdded {
        version: s.plan_version + 1,
        plan,
        task: id,
        after_merge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipping(pr: agentloop_config::PrScope) -> RunState {
        let mut settings = agentloop_config::Settings::from_config(&Default::default());
        settings.ship.forge = agentloop_config::Forge::Github;
        settings.ship.pr = pr;
        agentloop_journal::testing::created(
            "# Ship\n\n## T1: One\nVerify: true\n\n## T2: Two\nVerify: true\n",
            settings,
        )
    }

    #[test]
    fn a_run_that_committed_nothing_ships_nothing() {
        for pr in [
            agentloop_config::PrScope::Run,
            agentloop_config::PrScope::Task,
        ] {
            let mut s = shipping(pr);
            for t in &mut s.tasks {
                t.status = TaskStatus::Skipped;
            }
            assert_eq!(next(&s), None, "{pr:?}");
            // One task done and committed: its work is pushed.
            s.tasks[1].status = TaskStatus::Done;
            s.tasks[1].commit = Some("c0ffee".into());
            let first = match pr {
                agentloop_config::PrScope::Run => ShipStep::Push,
                agentloop_config::PrScope::Task => ShipStep::StartUnit,
            };
            assert_eq!(next(&s), Some(Action::Ship(first)), "{pr:?}");
        }
    }

    #[test]
    fn a_fix_for_the_base_branch_that_was_skipped_is_not_proposed_again() {
        let mut s = shipping(agentloop_config::PrScope::Run);
        for t in &mut s.tasks {
            t.status = TaskStatus::Done;
            t.commit = Some("c0ffee".into());
        }
        // Merged, then red on the base branch: a fix task, and no push yet.
        let mut plan = s.plan.clone();
        let mut fix = plan.tasks[0].clone();
        fix.id = "MAIN-1".into();
        plan.tasks.push(fix);
        for event in [
            Event::PrOpened {
                number: 1,
                url: "https://forge/pull/1".into(),
                created: true,
            },
            Event::ShipFixAdded {
                version: 2,
                plan,
                task: "MAIN-1".into(),
                after_merge: true,
            },
        ] {
            agentloop_journal::testing::then(&mut s, event);
        }
        assert_eq!(s.ship.pushed, None);
        let fix = s.tasks.iter().position(|t| t.id == "MAIN-1").unwrap();
        s.tasks[fix].status = TaskStatus::Skipped;
        assert_eq!(next(&s), None);
        s.tasks[fix].status = TaskStatus::Done;
        s.tasks[fix].commit = Some("f1x".into());
        assert_eq!(next(&s), Some(Action::Ship(ShipStep::Push)));
    }
}
