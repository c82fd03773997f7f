//! How an iteration ends: the dual condition (a claim of completion and a passing
//! verification), the guards on what the agent changed, replans, blocks and limits.

use agentloop_ground::failure::{fingerprint, last_lines};
use agentloop_ground::paths::path_matches;
use agentloop_ground::words::{clause, plural};
use agentloop_journal::*;
use agentloop_plan::Mode;
use agentloop_project::is_test_path;

use super::ladder::limit_wait;
use super::replan::review_replan;
use crate::action::Action;
use agentloop_ground::values::{OnLimit, OnProtectedChange};

pub(super) fn finish_open_iteration(s: &RunState, open: &OpenIteration) -> Action {
    let n = open.started.iteration;
    let task = open.started.task.clone();
    let finished = |outcome, reason: String, digest| {
        Action::Record(Event::IterationFinished(IterationFinished {
            iteration: n,
            outcome,
            reason,
            digest,
            commit: None,
            agent_failed: false,
            fingerprint: None,
            checkpoint: None,
        }))
    };
    let Some(agent) = &open.agent else {
        // The journal has no result for this iteration: its driver died mid-way.
        return finished(
            Outcome::Aborted,
            "the iteration was interrupted before the agent finished".into(),
            None,
        );
    };
    if agent.killed || (s.stop == Some(StopKind::Now) && open.verify.is_none()) {
        return finished(Outcome::Aborted, "stopped on request".into(), None);
    }
    if let Some(err) = agent
        .error
        .as_ref()
        .filter(|e| e.kind == AgentErrorKind::Lost)
    {
        return finished(
            Outcome::Aborted,
            format!("interrupted: {}", err.message),
            None,
        );
    }
    if let Some(err) = &agent.error {
        match err.kind {
            AgentErrorKind::RateLimit | AgentErrorKind::Overloaded => {
                let task = &open.started.task;
                let fallback = s
                    .settings
                    .fallback_agent
                    .as_ref()
                    .filter(|f| **f != open.started.agent);
                if let (OnLimit::Fallback, Some(f)) = (s.settings.limits.on_limit, fallback) {
                    if s.task(task).is_some_and(|t| t.rung != Rung::Fallback) {
                        return Action::Record(Event::Escalated {
                            task: task.clone(),
                            trigger: Trigger::UsageLimit {
                                agent: open.started.agent.clone(),
                            },
                            rung: Rung::Fallback,
                            evidence: format!("{}: {}", open.started.agent, err.message),
                        });
                    }
                    return finished(
                        Outcome::Limited,
                        format!("usage limit: {}; {f} takes over", err.message),
                        None,
                    );
                }
                if !open.limited {
                    return match limit_wait(s, open, agent, err) {
                        Ok(event) => Action::Record(event),
                        Err(why) => finished(Outcome::Blocked, why, None),
                    };
                }
                let what = if err.kind == AgentErrorKind::Overloaded {
                    "overloaded"
                } else {
                    "usage limit"
                };
                return finished(Outcome::Limited, format!("{what}: {}", err.message), None);
            }
            AgentErrorKind::Auth => {
                return finished(
                    Outcome::Blocked,
                    format!(
                        "the agent could not authenticate: {}. Fix the API key or log the CLI in, then `agentloop retry {}`",
                        clause(&err.message),
                        open.started.task
                    ),
                    None,
                );
            }
            AgentErrorKind::Billing => {
                return finished(
                    Outcome::Blocked,
                    format!(
                        "the agent's account cannot pay: {}. Fix billing, then `agentloop retry {}`",
                        clause(&err.message),
                        open.started.task
                    ),
                    None,
                );
            }
            _ => {}
        }
    }
    if let Some(action) = judge_tripwires(s, open, &finished) {
        return action;
    }
    if let Some(q) = &agent.signals.blocked {
        return finished(Outcome::Blocked, format!("the agent asks: {q}"), None);
    }
    // A DEBUG iteration looks for the cause; it is not verified and fixes nothing.
    if open.started.kind == IterationKind::Debug {
        return finished(
            Outcome::Failed,
            "debug: what it found goes to the next attempt".into(),
            None,
        );
    }
    if let Some(proposal) = &agent.signals.replan {
        match open.replan {
            None => return Action::Record(review_replan(s, &task, proposal)),
            Some(true) => {
                return finished(
                    Outcome::Replanned,
                    "the agent's replan was accepted".into(),
                    None,
                );
            }
            Some(false) => {
                let why = open.replan_rejection.clone().unwrap_or_default();
                return finished(
                    Outcome::Failed,
                    format!("replan rejected: {why}"),
                    Some(format!("Your REPLAN proposal was rejected: {why}")),
                );
            }
        }
    }
    if let Some(failure) = agent_failure(agent) {
        return Action::Record(Event::IterationFinished(IterationFinished {
            iteration: n,
            outcome: Outcome::Failed,
            reason: failure.reason,
            digest: Some(failure.digest),
            commit: None,
            agent_failed: true,
            fingerprint: Some(failure.fingerprint),
            checkpoint: None,
        }));
    }
    if agent.signals.complete
        && let Some(action) = judge_surface(s, open, &finished)
    {
        return action;
    }
    let Some(verify) = &open.verify else {
        return Action::Verify { iteration: n, task };
    };
    let (outcome, reason, digest) = judge(s, &task, agent, verify);
    if outcome == Outcome::Completed
        && let Some(action) = super::review::judge(s, open, &finished)
    {
        return action;
    }
    if outcome == Outcome::Completed && s.settings.in_worktrees() {
        return merge_verdict(open);
    }
    finished(outcome, reason, digest)
}

/// A run with workers: verified work is done once it is merged onto the integration
/// branch and checked there; a conflict or a failure on the merged result is a failed
/// attempt, with a digest for the agent.
fn merge_verdict(open: &OpenIteration) -> Action {
    let iteration = open.started.iteration;
    let end = |outcome, reason: String, digest, commit, fingerprint| {
        Action::Record(Event::IterationFinished(IterationFinished {
            iteration,
            outcome,
            reason,
            digest,
            commit,
            agent_failed: false,
            fingerprint,
            checkpoint: None,
        }))
    };
    match &open.merge {
        None | Some(MergeState::Started { .. }) => Action::Merge {
            batch: vec![iteration],
        },
        Some(MergeState::Merged { commit }) => end(
            Outcome::Completed,
            "verified, merged and checked on the merged result".into(),
            None,
            Some(commit.clone()),
            None,
        ),
        Some(MergeState::Failed {
            reason,
            digest,
            fingerprint,
            ..
        }) => end(
            Outcome::Failed,
            reason.clone(),
            Some(digest.clone()),
            None,
            fingerprint.clone(),
        ),
    }
}

/// After every iteration of a task with tripwires (`Must-not:`): they are checked,
/// and a hit stops the run at the tripwire gate until a person accepts it (the
/// iteration goes on) or rejects it (the iteration fails, the evidence in its digest).
/// `None` once nothing is hit, or the hits are accepted.
fn judge_tripwires(
    s: &RunState,
    open: &OpenIteration,
    finished: &dyn Fn(Outcome, String, Option<String>) -> Action,
) -> Option<Action> {
    let n = open.started.iteration;
    let task = &open.started.task;
    if super::tripwire::wires_for(s, task).is_empty() && open.tripwires.is_none() {
        return None;
    }
    let Some(check) = &open.tripwires else {
        return Some(Action::CheckTripwires { iteration: n });
    };
    if check.settled {
        return None;
    }
    let hits = hits_words(&check.hits);
    let digest = |why: &str| {
        Some(format!(
            "You did what this task must not do: {hits}. {why} Undo it, and do the task without it."
        ))
    };
    if let Some(note) = &check.rejected {
        return Some(finished(
            Outcome::Failed,
            format!("a person rejected what it did against its tripwires: {hits}"),
            digest(&format!("A person rejected it: {}.", clause(note))),
        ));
    }
    let skipped = s
        .task(task)
        .is_some_and(|t| t.status == agentloop_journal::TaskStatus::Skipped);
    if skipped || s.stop.is_some() {
        return Some(finished(
            Outcome::Failed,
            format!("its tripwires ({hits}) were never accepted"),
            digest("No one accepted it."),
        ));
    }
    Some(open_gate(s, Gate::Tripwire(task.clone())))
}

/// Before a claimed task is verified: the surface is checked against the baseline, and
/// a change is gated, restored or (with a person's rejection) restored and handed back.
/// `None` once the surface is as the baseline says (or the run does not judge it).
fn judge_surface(
    s: &RunState,
    open: &OpenIteration,
    finished: &dyn Fn(Outcome, String, Option<String>) -> Action,
) -> Option<Action> {
    if s.settings.on_protected_change == OnProtectedChange::Allow || s.baseline.is_none() {
        return None;
    }
    let n = open.started.iteration;
    let task = &open.started.task;
    let Some(check) = &open.surface else {
        return Some(Action::CheckSurface { iteration: n });
    };
    let list = || {
        check
            .changes
            .iter()
            .map(|c| format!("{} ({})", c.path, c.kind.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if check.settled {
        if let Some(cause @ RestoreCause::Rejected { .. }) = &check.restored {
            return Some(finished(
                Outcome::Failed,
                format!(
                    "a person rejected its change to the checks ({}); the baseline is restored",
                    list()
                ),
                Some(restored_note(&check.changes, cause)),
            ));
        }
        return None;
    }
    if let Some(cause) = &check.rejected {
        return Some(Action::Restore {
            iteration: n,
            cause: cause.clone(),
        });
    }
    if s.settings.on_protected_change == OnProtectedChange::Restore {
        return Some(Action::Restore {
            iteration: n,
            cause: RestoreCause::Policy,
        });
    }
    let skipped = s
        .task(task)
        .is_some_and(|t| t.status == agentloop_journal::TaskStatus::Skipped);
    if skipped || s.stop.is_some() {
        // The wait ends unapproved: the change stays in the tree and is judged again
        // when the task is next claimed.
        let why = if skipped {
            "skipped by a person"
        } else {
            "stopped on request"
        };
        return Some(finished(
            Outcome::Failed,
            format!(
                "{why} while its change to the checks ({}) waited for a person",
                list()
            ),
            Some(format!(
                "Your change to files that verify your work ({}) was never approved. They are not yours to change: make the checks pass as they are.",
                list()
            )),
        ));
    }
    Some(open_gate(s, Gate::Surface(task.clone())))
}

/// An iteration's gate: opened, or waited at once open. While another gate is open
/// (another worker's), this one waits its turn: one gate at a time, and a person asked
/// once (two opening each other in turn would never wait).
fn open_gate(s: &RunState, gate: Gate) -> Action {
    match &s.gate {
        Some(open) if *open == gate => Action::Wait(crate::action::WaitReason::Gate(gate)),
        Some(other) => Action::Wait(crate::action::WaitReason::Gate(other.clone())),
        None => Action::Record(Event::GateOpened { gate }),
    }
}

/// Why the agent's own process failed, when it did: it timed out, was killed by a
/// signal, exited non-zero without claiming completion, or its CLI reported an error
/// that is not a limit, a login or a bill. Its work is not checked: nothing it did
/// can complete the task.
struct AgentFailure {
    reason: String,
    digest: String,
    fingerprint: String,
}

fn agent_failure(agent: &AgentFinished) -> Option<AgentFailure> {
    let other_error = agent
        .error
        .as_ref()
        .filter(|e| matches!(e.kind, AgentErrorKind::Other | AgentErrorKind::Timeout));
    let what = if agent.timed_out {
        other_error
            .map(|e| e.message.clone())
            .unwrap_or_else(|| "the agent ran past its timeout".into())
    } else if agent.signals.complete {
        return None;
    } else if let Some(sig) = agent.signal {
        format!("the agent was killed by signal {sig}")
    } else if let Some(code) = agent.exit_code.filter(|c| *c != 0) {
        match other_error {
            Some(e) => format!("the agent exited {code}: {}", e.message),
            None => format!("the agent exited {code}"),
        }
    } else if let Some(e) = other_error {
        format!("the agent failed: {}", e.message)
    } else {
        return None;
    };
    let stderr = agent.stderr_tail.as_deref().unwrap_or("").trim();
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let reason = match last {
        Some(l) if !what.contains(l.trim()) => format!("{what} — {}", l.trim()),
        _ => what.clone(),
    };
    let mut digest = format!(
        "The agent's process failed before its work could be checked: {}.",
        clause(&what)
    );
    if !stderr.is_empty() {
        digest.push_str(&format!(
            " The end of its error output:\n```\n{}\n```",
            last_lines(stderr)
        ));
    }
    Some(AgentFailure {
        reason,
        digest,
        fingerprint: fingerprint("agent", &format!("{what}\n{stderr}")),
    })
}

/// Dual condition: the agent claimed completion and verification passed (and in tdd
/// mode the task's changes touched tests), with no guard broken.
fn judge(
    s: &RunState,
    task: &str,
    agent: &AgentFinished,
    verify: &VerifyFinished,
) -> (Outcome, String, Option<String>) {
    let changed: std::collections::BTreeSet<&String> = agent
        .changed_files
        .iter()
        .chain(&agent.task_changed)
        .collect();
    let protected: Vec<&String> = changed
        .iter()
        .copied()
        .filter(|f| s.settings.protected.iter().any(|p| path_matches(f, p)))
        .collect();
    if !protected.is_empty() {
        let list = protected
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!("the agent changed protected paths: {list}");
        return (
            Outcome::Failed,
            msg.clone(),
            Some(format!(
                "{msg}. Restore them; they are not yours to change."
            )),
        );
    }
    let scope = s
        .plan_task(task)
        .map(|t| t.scope.clone())
        .unwrap_or_default();
    if !scope.is_empty() {
        let outside: Vec<&String> = changed
            .iter()
            .copied()
            .filter(|f| !scope.iter().any(|p| path_matches(f, p)))
            .collect();
        if !outside.is_empty() {
            let list = outside
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let msg = format!(
                "changed files outside the task's scope ({}): {list}",
                scope.join(", ")
            );
            return (
                Outcome::Failed,
                msg.clone(),
                Some(format!("{msg}. Keep changes inside the scope.")),
            );
        }
    }
    if !verify.passed {
        let first = verify.commands.iter().find(|c| c.exit_code != Some(0));
        let reason = match first {
            Some(c) if c.timed_out => format!("verification timed out: `{}`", c.command),
            _ => format!("verification failed: {}", verify.failure_words()),
        };
        let claimed = if agent.signals.complete {
            " (the agent claimed the task was complete)"
        } else {
            ""
        };
        return (
            Outcome::Failed,
            format!("{reason}{claimed}"),
            verify.digest.clone(),
        );
    }
    if !agent.signals.complete {
        let msg = "verification passes, but the agent did not signal completion";
        return (
            Outcome::Failed,
            msg.into(),
            Some(format!(
                "{msg}. If every acceptance criterion is met, end your reply with TASK_COMPLETE on its own line."
            )),
        );
    }
    let tdd = s.mode_of(task) == Mode::Tdd;
    let touched = s.task(task).is_some_and(|t| t.tests_touched)
        || agent
            .changed_files
            .iter()
            .any(|f| is_test_path(f, &s.settings.test_patterns));
    if tdd && !touched {
        let msg = "tdd mode: verification passes but no test file was changed for this task";
        return (
            Outcome::Failed,
            msg.into(),
            Some(format!(
                "{msg}. Write a failing test first, then make it pass."
            )),
        );
    }
    let reason = match verify.evidence_words() {
        Some(words) => format!(
            "verified: {words} ({})",
            plural(verify.commands.len(), "command", "commands")
        ),
        None if verify.commands.is_empty() => {
            "done on the agent's word: nothing checks this task (no `Verify:` line, no `[verify] commands`)".into()
        }
        None => format!(
            "verified ({})",
            plural(verify.commands.len(), "command passed", "commands passed")
        ),
    };
    (Outcome::Completed, reason, None)
}
