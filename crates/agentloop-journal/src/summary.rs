//! The run's verdict and `summary.md`: every criterion of every task and of the run —
//! `Verify:` lines, `Criteria:` of each kind, `[verify] commands` — with how it was
//! met and the evidence, the cost per verified task and of failed attempts, and the
//! risks and alternatives the agents reported.
//!
//! - **SHIP**: every task done, every criterion verified by execution, measurement or
//!   a person's observation;
//! - **MONITOR**: something rests on review alone (a task done on the agent's word, a
//!   criterion unconfirmed) or a task is not done;
//! - **RESEARCH**: something is only assumed.

use std::fmt::Write;

use serde::Serialize;

use crate::state::RunState;
use crate::task::TaskStatus;
use agentloop_ground::words::{money, plural};
use agentloop_plan::{Evidence, Requirement};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Ship,
    Monitor,
    Research,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ship => "SHIP",
            Verdict::Monitor => "MONITOR",
            Verdict::Research => "RESEARCH",
        }
    }

    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Ship => {
                "every task done, every criterion verified by running it, measuring it or a person's confirmation"
            }
            Verdict::Monitor => {
                "something rests on review or exit codes alone, or is not done: watch it before relying on it"
            }
            Verdict::Research => "something is only assumed: find out before relying on it",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Met {
    Verified,
    /// Not verified: the task is not done, the check did not pass, or no one confirmed.
    Unverified,
    /// Rests on the agent's word or a reviewer alone.
    Reviewed,
    Assumed,
    /// Its checks passed by exit code, with no per-test evidence to back them.
    ExitCode,
    /// Its checks passed once a failing test, run again, passed.
    Flaky,
}

/// One line of the criteria table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The task; `None` for the run's own.
    pub task: Option<String>,
    pub kind: &'static str,
    pub criterion: String,
    pub met: Met,
    pub evidence: String,
}

/// How a command was seen passing in `checked`.
fn ran(s: &RunState, task: &str, command: &str) -> Option<String> {
    let t = s.task(task)?;
    let c = t.checked.iter().find(|c| c.command == command)?;
    c.passed().then(|| {
        let at = t
            .completed_iteration
            .map(|i| format!(" in iteration {i}"))
            .unwrap_or_default();
        match (&c.measured, c.tests.as_ref().filter(|t| t.judged)) {
            (Some(v), _) => format!("measured {v}{at}"),
            (None, Some(t)) => format!("{}{at}", t.shown()),
            (None, None) => format!("exit 0{at}, {:.1}s", c.duration_ms as f64 / 1000.0),
        }
    })
}

fn requirement_row(s: &RunState, task: &str, r: &Requirement) -> Row {
    let (met, evidence) = match (r.kind, &r.command) {
        (Evidence::Assumption, _) => (Met::Assumed, "assumed, never verified".to_string()),
        (Evidence::Observation, _) => match s.task(task) {
            Some(t) if t.observed => (
                Met::Verified,
                "a person confirmed it at the gate after the task".into(),
            ),
            _ => (Met::Unverified, "no one confirmed it".into()),
        },
        (_, Some(c)) => match ran(s, task, c) {
            Some(e) => (Met::Verified, e),
            None => (Met::Unverified, "not seen passing".into()),
        },
        (_, None) => (Met::Unverified, String::new()),
    };
    Row {
        task: Some(task.to_string()),
        kind: r.kind.as_str(),
        criterion: r.describe(),
        met,
        evidence,
    }
}

/// A task's per-test evidence as a criterion: its named tests went from failing to
/// passing (FAIL_TO_PASS) and nothing that passed before fails (PASS_TO_PASS); or its
/// checks passed by exit code alone.
/// `passing_at_baseline`: the tests that passed at the baseline (counted once per
/// table, not per task).
fn tests_row(s: &RunState, task: &str, names: bool, passing_at_baseline: usize) -> Option<Row> {
    let t = s.task(task)?;
    let e = crate::evidence::task_evidence(s, t);
    let done = t.status == TaskStatus::Done;
    let (met, evidence) = match &e {
        None if !names => return None,
        None => (Met::Unverified, "not seen passing".to_string()),
        Some(e) if e.exit_code_only => (
            Met::ExitCode,
            "exit code only: no per-test evidence (no check's runner gave a report)".into(),
        ),
        Some(e) if done && !e.flaky.is_empty() => (
            Met::Flaky,
            format!(
                "FAIL_TO_PASS {}/{}; {} failed beside the others and passed alone ({}): watch {}",
                e.named_passing,
                e.named,
                plural(e.flaky.len(), "test", "tests"),
                e.flaky.join(", "),
                if e.flaky.len() == 1 { "it" } else { "them" }
            ),
        ),
        Some(e) if done => {
            let kept = passing_at_baseline;
            let at = t
                .evidence_at
                .map(|i| format!(" in iteration {i}"))
                .unwrap_or_default();
            (
                Met::Verified,
                format!(
                    "FAIL_TO_PASS {}/{}; PASS_TO_PASS: {} still {}{at}",
                    e.named_passing,
                    e.named,
                    plural(kept, "test", "tests"),
                    if kept == 1 { "passes" } else { "pass" }
                ),
            )
        }
        Some(e) => (Met::Unverified, e.words()),
    };
    Some(Row {
        task: Some(task.to_string()),
        kind: "tests",
        criterion: if names {
            "its named tests pass, and every test that passed at the baseline still does".into()
        } else {
            "every test that passed at the baseline still passes".into()
        },
        met,
        evidence,
    })
}

/// Every criterion with how it was met.
pub fn rows(s: &RunState) -> Vec<Row> {
    let mut out = Vec::new();
    let passing_at_baseline = s
        .tests_baseline
        .as_ref()
        .map_or(0, |b| b.counts().passed as usize);
    for p in &s.plan.tasks {
        let start = out.len();
        for v in &p.verify {
            let (met, evidence) = match ran(s, &p.id, v) {
                Some(e) => (Met::Verified, e),
                None => (Met::Unverified, "not seen passing".into()),
            };
            out.push(Row {
                task: Some(p.id.clone()),
                kind: "execution",
                criterion: format!("`{v}` passes"),
                met,
                evidence,
            });
        }
        for c in &p.criteria {
            if let Ok(r) = Requirement::parse(c) {
                out.push(requirement_row(s, &p.id, &r));
            }
        }
        let done = s.task(&p.id).is_some_and(|t| t.status == TaskStatus::Done);
        if let Some(row) = tests_row(s, &p.id, !p.tests.is_empty(), passing_at_baseline) {
            out.push(row);
        }
        if let Some(what) = s.ship.fix_verified.get(&p.id) {
            out.push(Row {
                task: Some(p.id.clone()),
                kind: "execution",
                criterion: "the checks that failed pass".into(),
                met: Met::Verified,
                evidence: what.clone(),
            });
        }
        if out.len() == start && !s.settings.verify_commands.is_empty() {
            // Checked by the run's commands only: their rows below say so.
            continue;
        }
        if out.len() == start {
            let observed = s.task(&p.id).is_some_and(|t| t.observed);
            out.push(Row {
                task: Some(p.id.clone()),
                kind: "review",
                criterion: "done, as the agent said".into(),
                met: match (done, observed) {
                    (true, true) => Met::Verified,
                    (true, false) => Met::Reviewed,
                    _ => Met::Unverified,
                },
                evidence: if observed {
                    "a person confirmed it at the gate after the task".into()
                } else {
                    "nothing checks it: the agent's word".into()
                },
            });
        }
    }
    let done: Vec<&str> = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .map(|t| t.id.as_str())
        .collect();
    let everywhere = |command: &str| -> (Met, String) {
        let seen = done.iter().filter(|t| ran(s, t, command).is_some()).count();
        if !done.is_empty() && seen == done.len() {
            (
                Met::Verified,
                format!(
                    "passed with each of the {} done",
                    plural(seen, "task", "tasks")
                ),
            )
        } else {
            (
                Met::Unverified,
                format!(
                    "passed with {seen} of {} done",
                    plural(done.len(), "task", "tasks")
                ),
            )
        }
    };
    for c in &s.plan.criteria {
        let Ok(r) = Requirement::parse(c) else {
            continue;
        };
        let (met, evidence) = match (r.kind, &r.command) {
            (Evidence::Assumption, _) => (Met::Assumed, "assumed, never verified".into()),
            (Evidence::Observation, _) if s.final_approved => (
                Met::Verified,
                "a person confirmed it at the final review".into(),
            ),
            (Evidence::Observation, _) => (Met::Unverified, "no one confirmed it".into()),
            (_, Some(c)) => everywhere(c),
            (_, None) => (Met::Unverified, String::new()),
        };
        out.push(Row {
            task: None,
            kind: r.kind.as_str(),
            criterion: r.describe(),
            met,
            evidence,
        });
    }
    for c in &s.settings.verify_commands {
        let (met, evidence) = everywhere(c);
        out.push(Row {
            task: None,
            kind: "execution",
            criterion: format!("`{c}` passes ([verify] commands)"),
            met,
            evidence,
        });
    }
    if let Some(why) = &s.unconfined_checks {
        out.push(Row {
            task: None,
            kind: "confinement",
            criterion: "the checks ran confined (only their copy writable, no network)".into(),
            met: Met::Unverified,
            evidence: format!("they ran unconfined: {why}"),
        });
    }
    if s.settings.validate && !done.is_empty() {
        let (met, evidence) = match (&s.validation, &s.validation_failure) {
            (Some((at, true)), _) if *at == s.iterations => {
                (Met::Verified, "passed after the last task".to_string())
            }
            (Some((_, false)), Some((_, cmd))) => (
                Met::Unverified,
                format!("`{cmd}` fails on the whole project"),
            ),
            _ => (Met::Unverified, "not run after the last change".to_string()),
        };
        out.push(Row {
            task: None,
            kind: "validation",
            criterion: "every check passes on the whole project".into(),
            met,
            evidence,
        });
    }
    out
}

pub fn verdict(s: &RunState) -> Verdict {
    let rows = rows(s);
    if rows.iter().any(|r| r.met == Met::Assumed) {
        return Verdict::Research;
    }
    // No task at all (a run whose planners have yet to propose any) has done nothing.
    let all_done = !s.tasks.is_empty() && s.tasks.iter().all(|t| t.status == TaskStatus::Done);
    if all_done && rows.iter().all(|r| r.met == Met::Verified) {
        Verdict::Ship
    } else {
        Verdict::Monitor
    }
}

/// `summary.md`.
/// `[review]`: what the independent reviewer said of each task.
pub(crate) fn review_section(s: &RunState, heading: &str, out: &mut String) {
    let Some(r) = &s.settings.review else {
        return;
    };
    let _ = writeln!(
        out,
        "\n{heading} Independent review\n\nReviewer: {}{} (`when = {}`, at most {} rejections before a person decides).\n",
        r.agent.as_deref().unwrap_or("none"),
        r.second
            .as_deref()
            .map(|s| format!(", then {s} for high-risk work"))
            .unwrap_or_default(),
        match r.when {
            agentloop_config::ReviewWhen::Always => "always",
            agentloop_config::ReviewWhen::Risk => "risk",
            agentloop_config::ReviewWhen::Never => "never",
        },
        r.max_rounds
    );
    for t in &s.tasks {
        let said = if t.reviews.is_empty() {
            "no review yet".to_string()
        } else {
            t.reviews.join(", then ")
        };
        let _ = writeln!(out, "- {}: {}", t.id, said.replace('\n', " "));
    }
}

pub fn summary(s: &RunState) -> String {
    let v = verdict(s);
    let mut out = String::new();
    let _ = writeln!(out, "# Summary: {}\n", s.plan.title);
    let _ = writeln!(out, "**Verdict: {}** — {}.\n", v.as_str(), v.meaning());
    let done = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .count();
    let _ = writeln!(
        out,
        "Run `{}` ended **{}**: {done} of {} done, {}, {}.\n",
        s.run_id,
        s.status.as_str(),
        plural(s.tasks.len(), "task", "tasks"),
        plural(s.iterations as usize, "iteration", "iterations"),
        money(s.cost_usd)
    );
    if let Some(i) = &s.integration {
        let _ = writeln!(
            out,
            "The work is on branch `{}` at {}, every commit of it verified{}.\n",
            i.branch,
            &i.head[..i.head.len().min(10)],
            if i.landed {
                ", and landed on your branch"
            } else {
                "; `agentloop land` takes it onto your branch"
            }
        );
    }
    for t in s.tasks.iter().filter(|t| t.status != TaskStatus::Done) {
        let _ = writeln!(
            out,
            "- {} is {}{}",
            t.id,
            t.status.as_str(),
            t.skip_reason
                .as_deref()
                .or(t.blocked.as_deref())
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
    }
    out.push_str("\n## Criteria\n\n| Task | Kind | Criterion | Met | Evidence |\n| --- | --- | --- | --- | --- |\n");
    for r in rows(s) {
        let met = match r.met {
            Met::Verified => "verified",
            Met::Unverified => "NOT verified",
            Met::Reviewed => "review only",
            Met::Assumed => "assumed",
            Met::ExitCode => "exit code only",
            Met::Flaky => "forgiven as flaky",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {met} | {} |",
            r.task.as_deref().unwrap_or("(run)"),
            r.kind,
            r.criterion.replace('|', "\\|"),
            r.evidence.replace('|', "\\|")
        );
    }
    review_section(s, "##", &mut out);
    let failed: f64 = s.tasks.iter().map(|t| t.failed_cost_usd).sum();
    out.push_str("\n## Cost\n\n");
    let _ = writeln!(
        out,
        "- Per verified task: {}",
        if done > 0 {
            money(s.cost_usd / done as f64)
        } else {
            "(none verified)".into()
        }
    );
    let _ = writeln!(out, "- Failed attempts: {}", money(failed));
    let _ = writeln!(out, "- In all: {}", money(s.cost_usd));
    out.push_str("\n## Risks and alternatives the agent reported\n\n");
    if s.reported.is_empty() {
        out.push_str("(none)\n");
    }
    for r in &s.reported {
        let _ = writeln!(out, "- {r}");
    }
    out
}

#[cfg(test)]
mod tests {
    /// A run with no task (its planners have yet to propose one) has done nothing:
    /// not SHIP.
    #[test]
    fn no_task_is_not_every_task_done() {
        let mut config = agentloop_config::Config::default();
        config.run.planners = 1;
        let s = crate::testing::created(
            "# P\n\nMake three files.\n",
            agentloop_config::Settings::from_config(&config),
        );
        assert!(s.tasks.is_empty());
        assert_eq!(super::verdict(&s), super::Verdict::Monitor);
    }
}
