//! Per-test evidence in the run: when the test baseline is taken, and what each
//! verification must show against it (pure: the driver runs the checks).

use std::collections::BTreeSet;
use std::sync::Arc;

use agentloop_evidence::baseline::Landed;
use agentloop_evidence::{Expected, TestName, runner};
use agentloop_ground::values::Regression;
use agentloop_journal::{MergeState, RunState, TaskStatus};

/// Where a verification runs, which decides what "passed before" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The working tree (one worker): every task done so far is in it.
    Tree,
    /// A task's own worktree: only the baseline is sure to be in it.
    Worktree,
    /// The merged result on the integration branch, or the whole project at the end
    /// (validation): every task done so far is in it.
    Merged,
}

/// Every distinct check of the run, in plan order: what the baseline runs.
pub fn baseline_commands(s: &RunState) -> Vec<String> {
    plan_checks(&s.plan, &s.settings.verify_commands)
}

/// Every distinct check of `plan` (each task's, the plan's criteria) and then the
/// run's `commands`, in that order.
pub fn plan_checks(plan: &agentloop_plan::Plan, commands: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in plan
        .tasks
        .iter()
        .flat_map(|t| plan.checks_of(Some(t)))
        .chain(plan.checks_of(None))
        .chain(commands.iter().cloned())
    {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// Whether the test baseline is to be taken now: no agent has worked, there is none
/// yet, and the run judges per test, or traces what its checks read (on the tree it
/// recorded when it was created).
pub fn baseline_due(s: &RunState) -> bool {
    s.tests_baseline.is_none()
        && s.iterations == 0
        && (per_test_wanted(&s.plan, &s.settings)
            || (s.tree_at_create.is_some() && trace_wanted(&s.plan, &s.settings)))
}

/// Whether a run of `plan` with `settings` takes a test baseline: for per-test
/// evidence, or to trace what its checks read.
pub fn baseline_wanted(plan: &agentloop_plan::Plan, settings: &agentloop_config::Settings) -> bool {
    per_test_wanted(plan, settings) || trace_wanted(plan, settings)
}

/// It judges per test, and a task names tests or a check may start a runner
/// agentloop reads.
fn per_test_wanted(plan: &agentloop_plan::Plan, settings: &agentloop_config::Settings) -> bool {
    settings.evidence
        && (plan.tasks.iter().any(|t| !t.tests.is_empty())
            || plan_checks(plan, &settings.verify_commands)
                .iter()
                .any(|c| runner::may_be_runner(c)))
}

/// It guards a verification surface, verifies on a clean copy and has checks: the
/// baseline run is where what each check reads is traced.
fn trace_wanted(plan: &agentloop_plan::Plan, settings: &agentloop_config::Settings) -> bool {
    settings.clean_copy
        && settings.on_protected_change != agentloop_ground::values::OnProtectedChange::Allow
        && !plan_checks(plan, &settings.verify_commands).is_empty()
}

/// What a verification of `task` (none: every done task, as validation checks them)
/// must show at `place`; `None` when the run judges by exit codes alone.
pub fn expected(s: &RunState, task: Option<&str>, place: Place) -> Option<Expected> {
    if !s.settings.evidence {
        return None;
    }
    let done = || {
        s.tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Done && Some(t.id.as_str()) != task)
    };
    let (named, own): (Vec<TestName>, Vec<String>) = match task {
        Some(id) => (
            s.plan_task(id).map(|t| t.tests.clone()).unwrap_or_default(),
            s.plan.checks_of(s.plan_task(id)),
        ),
        None => {
            let mut named: Vec<TestName> = Vec::new();
            let mut own: Vec<String> = Vec::new();
            for t in done() {
                for n in s
                    .plan_task(&t.id)
                    .map(|p| p.tests.as_slice())
                    .unwrap_or(&[])
                {
                    if !named.contains(n) {
                        named.push(n.clone());
                    }
                }
                for c in s.plan.checks_of(s.plan_task(&t.id)) {
                    if !own.contains(&c) {
                        own.push(c);
                    }
                }
            }
            (named, own)
        }
    };
    let made_passing: BTreeSet<String> = if place == Place::Worktree {
        BTreeSet::new()
    } else {
        done()
            .filter_map(|t| t.evidence.as_ref())
            .flat_map(|e| &e.named)
            .filter(|seen| seen.now == Some(agentloop_evidence::Outcome::Passed))
            .map(|seen| seen.id.clone())
            .collect()
    };
    // Only the tests a person declared flaky are forgiven outright; one seen to fail
    // and then pass when run again is run again each time it fails: an agent
    // that makes a test fail only beside the others does not get it forgiven for good.
    let flaky = s.settings.flaky.clone();
    Some(Expected {
        named,
        baseline: s.tests_baseline.clone().map(Arc::new),
        made_passing,
        flaky,
        own,
        per_test_regression: s.settings.regression == Regression::PerTest,
        excused: s.surface_approved.clone(),
        landed: Default::default(),
    })
}

/// What the tasks already on the integration branch want kept on the merged result of
/// a batch of `batch`'s tasks (the integration branch is always green): the checks of
/// every task done or merged, with their measures and held-out checks, and each test
/// they made pass.
pub fn landed(s: &RunState, batch: &[&str]) -> (Landed, Vec<(String, agentloop_plan::Threshold)>) {
    let merged = s
        .running
        .iter()
        .filter(|o| matches!(o.merge, Some(MergeState::Merged { .. })))
        .map(|o| o.started.task.as_str());
    let ids: BTreeSet<&str> = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .map(|t| t.id.as_str())
        .chain(merged)
        .filter(|id| !batch.contains(id))
        .collect();
    let mut landed = Landed::default();
    let mut measures = Vec::new();
    // In plan order, as the checks are run.
    for t in s.tasks.iter().filter(|t| ids.contains(t.id.as_str())) {
        for c in s.plan.checks(&t.id) {
            if !landed.commands.contains(&c) {
                landed.commands.push(c);
            }
        }
        for m in s.plan.measures(&t.id) {
            if !measures.contains(&m) {
                measures.push(m);
            }
        }
        for n in s.plan_task(&t.id).into_iter().flat_map(|p| &p.holdout) {
            if !landed.held_out.contains(n) {
                landed.held_out.push(n.clone());
            }
        }
        for seen in t.evidence.iter().flat_map(|e| &e.named) {
            if seen.now == Some(agentloop_evidence::Outcome::Passed) {
                landed
                    .tests
                    .entry(seen.id.clone())
                    .or_insert_with(|| t.id.clone());
            }
        }
    }
    (landed, measures)
}
