//! A planner's tasks held to real checks: what each must name before it can join the
//! plan (tests or a held-out check, not a copy of a task there), and what its checks
//! must show on the tree as it stands (something failing that the task is to make
//! pass).

use std::collections::BTreeMap;

use agentloop_evidence::names::{NameCheck, check_names};
use agentloop_evidence::{Outcome, TestsBaseline};
use agentloop_ground::words::plural;
use agentloop_journal::{RunState, TaskStatus};
use agentloop_plan::{Plan, Task};

/// Why `t`, proposed for `s`'s plan, cannot join it before anything runs: it names
/// no check, only checks that cannot fail, nothing that tells (no `Tests:`, no
/// `Holdout:`), or it repeats a task that is done or still to do.
pub(super) fn refused_as_written(s: &RunState, proposed: &[Task], t: &Task) -> Option<String> {
    if s.plan.task(&t.id).is_some() {
        return Some(format!(
            "{} is already in the plan: a planner adds tasks, it does not change them",
            t.id
        ));
    }
    if t.verify.is_empty() && t.tests.is_empty() && t.holdout.is_empty() {
        return Some(format!(
            "{} names no check (`Verify:`): nothing could tell it done",
            t.id
        ));
    }
    if t.tests.is_empty() && t.holdout.is_empty() && t.verify.iter().all(|c| cannot_fail(c)) {
        return Some(format!(
            "{}'s checks cannot fail (`{}`): a check must fail until the work is done",
            t.id,
            t.verify.join("`, `")
        ));
    }
    if t.tests.is_empty() && t.holdout.is_empty() {
        return Some(format!(
            "{} names no test (`Tests:`) and no held-out check (`Holdout:`): a check's exit code alone does not say which work it judges; name the tests that must go from failing (or missing) to passing",
            t.id
        ));
    }
    if s.plan.checks_of(Some(t)).is_empty() && !t.tests.is_empty() && t.holdout.is_empty() {
        return Some(format!(
            "{} names tests but no check that runs them (`Verify:`)",
            t.id
        ));
    }
    let key = same(&s.plan, t);
    let earlier = s
        .plan
        .tasks
        .iter()
        .filter(|o| {
            s.task(&o.id)
                .is_none_or(|st| st.status == TaskStatus::Done || !st.status.is_settled())
        })
        .chain(proposed.iter().take_while(|o| o.id != t.id))
        .find(|o| same(&s.plan, o) == key);
    earlier.map(|o| {
        let standing = match s.task(&o.id).map(|st| st.status) {
            Some(TaskStatus::Done) => "done",
            Some(_) => "still to do",
            None => "proposed with it",
        };
        format!(
            "{} is {} again (the same checks, tests and held-out checks), which is {standing}: a task must name work no other task does",
            t.id, o.id
        )
    })
}

/// What makes two tasks the same task: their checks, tests and held-out checks, each
/// as one spelling (`sh ./files.sh  t1` is `sh files.sh t1`; a name twice is once).
fn same(plan: &Plan, t: &Task) -> (Vec<String>, Vec<String>, Vec<String>) {
    let spelled = |s: &str| {
        s.split_whitespace()
            .map(|w| w.strip_prefix("./").unwrap_or(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut checks: Vec<String> = plan.checks_of(Some(t)).iter().map(|c| spelled(c)).collect();
    checks.sort();
    checks.dedup();
    let mut tests: Vec<String> = t.tests.iter().map(|n| spelled(&n.pattern)).collect();
    tests.sort();
    tests.dedup();
    let mut holdout = t.holdout.clone();
    holdout.sort();
    holdout.dedup();
    (checks, tests, holdout)
}

/// A check that passes whatever the work is: `true`, `:`, `exit 0`, an `echo`, or
/// one whose failure is turned into a success (`… || true`).
fn cannot_fail(check: &str) -> bool {
    let c = check.trim().trim_end_matches(';').trim();
    let always = ["true", ":", "exit 0", "/bin/true", "/usr/bin/true"];
    always.contains(&c)
        || c.starts_with("echo ")
        || c == "echo"
        || c.starts_with("printf ")
        || ["|| true", "|| :", "|| exit 0", "; true", "; exit 0"]
            .iter()
            .any(|tail| c.ends_with(tail))
}

/// What proposed tasks' checks showed on the tree as it stands, before any of them
/// was worked on.
#[derive(Debug, Clone, Default)]
pub struct AsItStands {
    /// Each check once, as the test baseline takes it.
    pub checks: TestsBaseline,
    /// Each held-out check named, and whether it passed.
    pub held_out: BTreeMap<String, bool>,
    /// Checks that run a script not in the tree yet: the task's agent writes it, and
    /// a person sees it at the surface gate before it judges anything.
    pub to_come: std::collections::BTreeSet<String>,
}

/// Why one of `tasks` (proposed for `plan`, which holds them) cannot join the plan,
/// given what their checks showed now: a named test that already passes, tests
/// named for checks that report none, or nothing failing that the task would make
/// pass. `evidence`: the run judges per test.
pub fn refused_as_it_stands(
    tasks: &[Task],
    plan: &Plan,
    now: &AsItStands,
    evidence: bool,
) -> Option<String> {
    tasks
        .iter()
        .find_map(|t| task_as_it_stands(t, plan, now, evidence))
}

fn task_as_it_stands(t: &Task, plan: &Plan, now: &AsItStands, evidence: bool) -> Option<String> {
    let checks = plan.checks_of(Some(t));
    let ran: Vec<_> = now
        .checks
        .commands
        .iter()
        .filter(|c| checks.contains(&c.command))
        .collect();
    let held_out_fails = t
        .holdout
        .iter()
        .any(|n| now.held_out.get(n) == Some(&false));
    if !evidence {
        let a_check_fails = ran.iter().any(|c| c.exit_code != Some(0));
        return (!a_check_fails && !held_out_fails).then(|| {
            format!(
                "{}'s checks pass on the tree as it stands: there is nothing for it to do",
                t.id
            )
        });
    }
    if t.tests.is_empty() {
        return (!held_out_fails).then(|| {
            format!(
                "{}'s held-out {} on the tree as it stands: there is nothing for it to do",
                t.id,
                if t.holdout.len() == 1 {
                    format!("check `{}` passes", t.holdout[0])
                } else {
                    "checks pass".to_string()
                }
            )
        });
    }
    if let Some(c) = ran
        .iter()
        .find(|c| (c.runner.is_none() || c.problem.is_some()) && !now.to_come.contains(&c.command))
    {
        let why = match (&c.runner, &c.problem) {
            (Some(r), Some(p)) => format!("{r} gave no report: {p}"),
            _ => "it gives no per-test report (exit code only)".to_string(),
        };
        return Some(format!(
            "{} names tests, but its check `{}` cannot show them passing: {why}",
            t.id, c.command
        ));
    }
    let mut collected: BTreeMap<&str, Outcome> = BTreeMap::new();
    for c in &ran {
        for (id, o) in &c.tests {
            collected
                .entry(id.as_str())
                .and_modify(|was| *was = was.worst(*o))
                .or_insert(*o);
        }
    }
    for (name, check) in t.tests.iter().zip(check_names(&t.tests, &collected)) {
        match check {
            NameCheck::Matched {
                failing: 0,
                passing,
            } => {
                return Some(format!(
                    "{}'s `Tests: {}` names {} that already {} on the tree as it stands: name the tests the task is to make pass (failing now, or not there yet)",
                    t.id,
                    name.pattern,
                    plural(passing, "test", "tests"),
                    if passing == 1 { "passes" } else { "pass" }
                ));
            }
            // A skipped or expected-to-fail test is not failing: a worker could make it
            // run (or pass as it was meant to fail) without any work.
            NameCheck::Matched { .. }
                if !collected.iter().any(|(id, o)| {
                    name.matches(id) && matches!(o, Outcome::Failed | Outcome::Errored)
                }) =>
            {
                return Some(format!(
                    "{}'s `Tests: {}` names only tests that are skipped or expected to fail on the tree as it stands, none failing: name tests that fail now, or mark a test the task adds `(new)`",
                    t.id, name.pattern
                ));
            }
            // A name no check reports may be one a worker brings into the report by
            // other means than the work (a deselected test run again): a test the task
            // adds says so.
            NameCheck::Unmatched if !now.to_come.iter().any(|c| checks.contains(c)) => {
                return Some(format!(
                    "{}'s `Tests: {}` names no test its checks report on the tree as it stands: name reported tests, or mark a test the task adds `(new)`",
                    t.id, name.pattern
                ));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_evidence::BaselineCommand;

    fn task(text: &str) -> Plan {
        Plan::parse_unchecked("p", &format!("# P\n\n{text}")).unwrap()
    }

    fn ran(command: &str, runner: Option<&str>, tests: &[(&str, Outcome)]) -> BaselineCommand {
        BaselineCommand {
            command: command.into(),
            runner: runner.map(str::to_string),
            exit_code: Some(if tests.iter().all(|(_, o)| *o == Outcome::Passed) {
                0
            } else {
                1
            }),
            problem: None,
            tests: tests.iter().map(|(id, o)| (id.to_string(), *o)).collect(),
            read: Default::default(),
            duration_ms: None,
            shadowable: Default::default(),
        }
    }

    fn now(commands: Vec<BaselineCommand>, held_out: &[(&str, bool)]) -> AsItStands {
        AsItStands {
            checks: TestsBaseline {
                commands,
                ..Default::default()
            },
            held_out: held_out.iter().map(|(n, p)| (n.to_string(), *p)).collect(),
            to_come: Default::default(),
        }
    }

    #[test]
    fn a_task_joins_only_with_something_failing_for_it_to_make_pass() {
        let plan = task("## T2: Div\nVerify: pytest -q\nTests: test_div\n");
        let suite = |div: Outcome| {
            now(
                vec![ran(
                    "pytest -q",
                    Some("pytest"),
                    &[("t.py::test_add", Outcome::Passed), ("t.py::test_div", div)],
                )],
                &[],
            )
        };
        assert_eq!(
            refused_as_it_stands(&plan.tasks, &plan, &suite(Outcome::Failed), true),
            None
        );
        let passing = refused_as_it_stands(&plan.tasks, &plan, &suite(Outcome::Passed), true);
        assert!(
            passing
                .as_deref()
                .is_some_and(|r| r.contains("already passes")),
            "{passing:?}"
        );
        // A test that is not there yet is the task's to add, when it says so.
        let new = task("## T2: Div\nVerify: pytest -q\nTests: test_mod (new)\n");
        assert_eq!(
            refused_as_it_stands(&new.tasks, &new, &suite(Outcome::Passed), true),
            None
        );
        let unmarked = task("## T2: Div\nVerify: pytest -q\nTests: test_mod\n");
        let r = refused_as_it_stands(&unmarked.tasks, &unmarked, &suite(Outcome::Passed), true);
        assert!(r.as_deref().is_some_and(|r| r.contains("`(new)`")), "{r:?}");
        // A skipped or expected-to-fail test is not one failing for it to make pass.
        for quiet in [Outcome::Skipped, Outcome::Xfail] {
            let r = refused_as_it_stands(&plan.tasks, &plan, &suite(quiet), true);
            assert!(
                r.as_deref()
                    .is_some_and(|r| r.contains("skipped or expected to fail")),
                "{quiet:?}: {r:?}"
            );
        }
        // Names for a check that reports no test can never be seen to pass.
        let blind = task("## T2: Div\nVerify: make check\nTests: test_div\n");
        let r = refused_as_it_stands(
            &blind.tasks,
            &blind,
            &now(vec![ran("make check", None, &[])], &[]),
            true,
        );
        assert!(r.is_some_and(|r| r.contains("exit code only")));
        // Unless the script it runs is the task's to write.
        let mut later = now(vec![ran("make check", None, &[])], &[]);
        later.to_come.insert("make check".into());
        assert_eq!(
            refused_as_it_stands(&blind.tasks, &blind, &later, true),
            None
        );
        // Judged by exit codes, a check must fail now.
        let exit = task("## T2: Div\nVerify: sh t.sh\nTests: x\n");
        let ok = now(vec![ran("sh t.sh", None, &[])], &[]);
        assert!(refused_as_it_stands(&exit.tasks, &exit, &ok, false).is_some());
    }

    #[test]
    fn a_copy_in_another_spelling_is_the_same_task() {
        let s = agentloop_journal::testing::created(
            "# P\n\n## T1: Files\nVerify: sh files.sh t1\nTests: t1\n",
            agentloop_config::Settings::from_config(&agentloop_config::Config::default()),
        );
        let proposed = task("## T2: Again\nVerify: sh ./files.sh  t1\nTests: t1, t1\n");
        let r = refused_as_written(&s, &[], &proposed.tasks[0]);
        assert!(
            r.as_deref().is_some_and(|r| r.contains("T2 is T1 again")),
            "{r:?}"
        );
    }

    #[test]
    fn a_held_out_check_that_passes_now_tells_nothing() {
        let plan = task("## T2: Div\nVerify: sh t.sh\nHoldout: div\n");
        let checks = vec![ran("sh t.sh", None, &[])];
        let r = refused_as_it_stands(
            &plan.tasks,
            &plan,
            &now(checks.clone(), &[("div", true)]),
            true,
        );
        assert!(r.is_some_and(|r| r.contains("held-out check `div` passes")));
        assert_eq!(
            refused_as_it_stands(&plan.tasks, &plan, &now(checks, &[("div", false)]), true),
            None
        );
    }
}
