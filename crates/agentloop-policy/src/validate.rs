//! The VALIDATE phase: once every task is settled, every done task's checks and the
//! run's `[verify] commands` run again on the whole project — work a later task did
//! can break an earlier one's. A failure reopens work as a `VALIDATE-N` task with the
//! failure, up to `validate_fixes`; then the run fails. Validated again after any
//! later iteration. Pure.

use agentloop_journal::{Event, FinishReason, RunState, RunStatus, TaskStatus};
use agentloop_plan::Task;

use crate::action::Action;

pub(super) fn next(s: &RunState) -> Option<Action> {
    if !s.settings.validate || !s.tasks.iter().any(|t| t.status == TaskStatus::Done) {
        return None;
    }
    match s.validation {
        Some((at, true)) if at == s.iterations => None,
        Some((at, false)) if at == s.iterations => Some(fix_or_fail(s)),
        _ => Some(Action::Validate),
    }
}

fn fix_or_fail(s: &RunState) -> Action {
    // What no fix task can mend (a coverage step that wrote no report) ends the run
    // with the reason, for a person: no agent is paid to try.
    if let Some(why) = &s.validation_not_the_work {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Failed,
            reason: FinishReason::Error {
                message: format!("validation cannot pass whatever the agents do: {why}"),
            },
        });
    }
    let limit = s.settings.validate_fixes;
    if s.validation_fixes >= limit {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Failed,
            reason: FinishReason::Error {
                message: format!(
                    "the run's checks fail on the whole project after {} fix{}",
                    s.validation_fixes,
                    if s.validation_fixes == 1 { "" } else { "es" }
                ),
            },
        });
    }
    let n = s.validation_fixes + 1;
    let id = format!("VALIDATE-{n}");
    let failing = s
        .validation_failure
        .as_ref()
        .map(|(_, c)| c.clone())
        .filter(|c| !c.is_empty());
    let mut plan = s.plan.clone();
    let mut task = Task::new(&id, "Make the run's checks pass on the whole project");
    task.body = "Every task was verified on its own, but with all of them done one of their checks fails on the whole project (a later task's work breaks an earlier one's). The failure is in \"Last attempt failed\" below. Fix the cause in the code (not the checks), keeping every task's work, then say TASK_COMPLETE; agentloop validates the whole project again.".into();
    task.verify = failing.into_iter().collect();
    task.depends = s.plan.tasks.iter().map(|t| t.id.clone()).collect();
    plan.tasks.push(task);
    Action::Record(Event::ValidationFixAdded {
        version: s.plan_version + 1,
        plan,
        task: id,
    })
}
