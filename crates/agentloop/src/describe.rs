//! Events and control requests in words: one line each, for `log`, the progress lines
//! and the control commands.

use agentloop_ground::words::plural;
use agentloop_journal::{Event, Gate, Request, RunState};

/// At most `max` characters of `s`, with "…" when cut.
fn ellipsis(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// One line about an event, for `log` and the progress lines.
pub(crate) fn event(e: &Event) -> String {
    match e {
        Event::RunCreated { run_id, plan, .. } => {
            format!(
                "run {run_id}: {} ({})",
                plan.title,
                plural(plan.tasks.len(), "task", "tasks")
            )
        }
        Event::DriverStarted { pid, version, .. } => {
            format!("driver pid {pid}, agentloop {version}")
        }
        Event::IterationStarted(s) => {
            format!(
                "iteration {} · task {} · attempt {} · {:?} · agent {}",
                s.iteration, s.task, s.attempt, s.kind, s.agent
            )
        }
        Event::AgentFinished(a) => format!(
            "iteration {} · {} · {} bytes · claimed complete: {} · {} changed · ${:.4}{}",
            a.iteration,
            match (a.timed_out, a.killed, a.signal, a.exit_code) {
                (true, ..) => "timed out".to_string(),
                (_, true, ..) => "stopped on request".to_string(),
                (_, _, Some(sig), _) => format!("killed by signal {sig}"),
                (_, _, _, Some(c)) => format!("exit {c}"),
                _ => "exit unknown".to_string(),
            },
            a.output_bytes,
            a.signals.complete,
            plural(a.changed_files.len(), "file", "files"),
            a.cost_usd,
            a.final_message
                .as_deref()
                .and_then(|m| m.lines().rev().find(|l| !l.trim().is_empty()))
                .map(|l| format!(" · said “{}”", ellipsis(l.trim(), 80)))
                .unwrap_or_default()
        ),
        Event::VerifyFinished(v) => format!(
            "iteration {} · {} · {}{}{}{}",
            v.iteration,
            if v.passed { "passed" } else { "failed" },
            plural(v.commands.len(), "command", "commands"),
            v.evidence_words()
                .map(|w| format!(" · {w}"))
                .unwrap_or_default(),
            match v.left_out.as_slice() {
                [] => String::new(),
                [one] => format!(" · left out of the checks: {}", one.path),
                [first, rest @ ..] => format!(
                    " · left out of the checks: {} and {} more",
                    first.path,
                    rest.len()
                ),
            },
            v.fingerprint
                .as_ref()
                .map(|f| format!(" · fingerprint {f}"))
                .unwrap_or_default()
        ),
        Event::IterationFinished(f) => {
            format!("iteration {} · {:?} · {}", f.iteration, f.outcome, f.reason)
        }
        Event::Escalated {
            task,
            trigger,
            rung,
            ..
        } => format!("task {task}: {} → {rung:?}", trigger.describe()),
        Event::ReplanAccepted {
            task,
            version,
            added,
            ..
        } => format!("task {task} → {} (plan v{version})", added.join(", ")),
        Event::ReplanRejected { task, reason } => format!("task {task}: {reason}"),
        Event::PlannerStarted { planner, basis } => format!("planner {planner} asked ({basis})"),
        Event::PlannerFinished(f) => format!("planner {}: {}", f.planner, f.outcome.describe()),
        Event::CycleJudged(j) => format!(
            "cycle {} judged by {}: {} ({})",
            j.cycle,
            j.by,
            j.verdict.as_str(),
            j.reasons.join("; ")
        ),
        Event::GateOpened { gate } => gate.describe(),
        Event::Control {
            request, source, ..
        } => format!("{} (from {source})", self::request(request)),
        Event::LimitHit {
            kind,
            message,
            until_ms,
            known_reset,
            agent,
            ..
        } => format!(
            "{}{kind:?}: {message} · waiting until {}{}",
            agent.as_ref().map(|a| format!("{a}: ")).unwrap_or_default(),
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(*until_ms)
            ),
            if *known_reset {
                ""
            } else {
                " (reset time not given; backoff)"
            }
        ),
        Event::LimitWaitOver => "the limit's wait is over".into(),
        Event::AgentLimitOver { agent } => format!("{agent}: the limit's wait is over"),
        Event::TeamTaskCompleted { task, teammate } => format!(
            "team: task {task} completed{} and verified",
            teammate
                .as_ref()
                .map(|t| format!(" by {t}"))
                .unwrap_or_default()
        ),
        Event::SessionEnded {
            session_id,
            reason,
            commit,
        } => format!(
            "session {session_id} ended ({reason}){}",
            commit
                .as_ref()
                .map(|c| format!(
                    "; its pending changes committed as {} (not verified)",
                    &c[..c.len().min(12)]
                ))
                .unwrap_or_default()
        ),
        Event::HookStop {
            session_id, active, ..
        } => {
            format!(
                "session {session_id} stopped{}",
                if *active {
                    " (after a continuation)"
                } else {
                    ""
                }
            )
        }
        Event::SessionBound { session_id, .. } => format!("bound to session {session_id}"),
        Event::IntegrationStarted { branch, base } => {
            format!("integrating on branch {branch} (from {})", short(base))
        }
        Event::MergeStarted { iteration, head } => {
            format!("iteration {iteration}: merging onto {}", short(head))
        }
        Event::Merged { iteration, commit } => format!(
            "iteration {iteration}: merged and checked on the merged result · {}",
            short(commit)
        ),
        Event::MergeFailed {
            iteration, reason, ..
        } => format!("iteration {iteration}: not merged: {reason}"),
        Event::MergeRequeued { iteration, reason } => {
            format!("iteration {iteration}: back in the merge queue: {reason}")
        }
        Event::Landed { branch, commit } => {
            format!("landed: {branch} is now {}", short(commit))
        }
        Event::BaselineRecorded { files } => format!(
            "baseline of the verification surface: {}",
            agentloop_ground::words::plural(files.len(), "file", "files")
        ),
        Event::TestsBaseline(b) => format!(
            "test baseline{}: {}",
            if b.cached { " (cached)" } else { "" },
            b.words()
        ),
        Event::JobState(j) => format!("iteration {}: {}", j.iteration, j.describe()),
        Event::SandboxDenied { iteration, denial } => {
            format!(
                "iteration {iteration}: the sandbox refused {}",
                denial.describe()
            )
        }
        Event::ChecksUnconfined { why } => format!("the checks run unconfined: {why}"),
        Event::ReviewStarted(r) if r.of == 0 => {
            format!("iteration {}: not reviewed ({} risk)", r.iteration, r.risk)
        }
        Event::ReviewStarted(r) => format!(
            "iteration {}: {} reviews it ({} risk, reviewer {} of {})",
            r.iteration, r.reviewer, r.risk, r.round, r.of
        ),
        Event::ReviewFinished(r) => match r.verdict {
            agentloop_journal::ReviewVerdict::Approve => {
                format!("iteration {}: {} approves", r.iteration, r.reviewer)
            }
            agentloop_journal::ReviewVerdict::Reject => format!(
                "iteration {}: {} rejects{}: {}",
                r.iteration,
                r.reviewer,
                if r.unparsable { " (no verdict)" } else { "" },
                r.findings
                    .iter()
                    .map(agentloop_journal::Finding::words)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        },
        Event::TripwiresChecked { iteration, hits } if hits.is_empty() => {
            format!("iteration {iteration}: no tripwire hit")
        }
        Event::TripwiresChecked { iteration, hits } => format!(
            "iteration {iteration} hit a tripwire: {}",
            agentloop_journal::hits_words(hits)
        ),
        Event::SurfaceChecked { iteration, changes } if changes.is_empty() => {
            format!("iteration {iteration}: the verification surface is as the baseline")
        }
        Event::SurfaceChecked { iteration, changes } => format!(
            "iteration {iteration} changed the verification surface: {}",
            changes
                .iter()
                .map(|c| c.describe())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Event::PersonChangedSurface { files } => format!(
            "a person changed {} of the verification surface while no agent was at work: the baseline takes it as theirs",
            files.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        Event::SurfaceRestored { iteration, cause } => format!(
            "iteration {iteration}: baseline versions restored ({})",
            match cause {
                agentloop_journal::RestoreCause::Policy => "on_protected_change = restore",
                agentloop_journal::RestoreCause::Rejected { .. } => "a person rejected the change",
            }
        ),
        Event::ControlRefused {
            source,
            request,
            why,
        } => format!("refused {} (from {source}): {why}", self::request(request)),
        Event::ShipPushed { branch, commit } => format!("{commit:.12} pushed to {branch}"),
        Event::PrOpened {
            number,
            url,
            created,
        } => format!(
            "pull request #{number} {} · {url}",
            if *created { "opened" } else { "updated" }
        ),
        Event::ChecksFinished {
            commit,
            passed,
            checks,
        } => format!(
            "{commit:.12} · {} · {}",
            if *passed { "green" } else { "red" },
            checks
                .iter()
                .map(|c| format!("{}: {}", c.name, c.conclusion))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Event::ShipFixAdded { task, version, .. } => {
            format!("a red check goes back to the agent as task {task} (plan v{version})")
        }
        Event::ReviewApproved { by } => format!("approved by {by}"),
        Event::DiffGatesChecked { commit, triggered } => {
            format!("{commit:.12}: {}", gates_words(triggered, "needs"))
        }
        Event::TaskDiffChecked {
            task,
            commit,
            triggered,
        } => format!(
            "task {task}, {}: {}",
            commit
                .as_deref()
                .map_or("not committed".to_string(), |c| format!("{c:.12}")),
            gates_words(triggered, "held for")
        ),
        Event::DiffGateApproved { gate, by } => format!("the {gate} gate approved by {by}"),
        Event::PrReleased { gates } => format!(
            "the pull request's holds taken off: {} (its account says they passed)",
            gates.join(", ")
        ),
        Event::PrMerged { commit } => format!("merged: the base branch is at {commit:.12}"),
        Event::Validated {
            passed, commands, ..
        } => format!(
            "validation of the whole project: {} ({} run)",
            if *passed { "passed" } else { "FAILED" },
            plural(commands.len(), "check", "checks")
        ),
        Event::ValidationFixAdded { task, version, .. } => {
            format!("the failed validation goes back to the agent as task {task} (plan v{version})")
        }
        Event::ShipUnitStarted {
            task, base, onto, ..
        } => format!("task {task} next: its own pull request into {base}, from {onto:.12}"),
        Event::TaskShipped { task, empty } => {
            if *empty {
                format!("task {task}: nothing to propose, its change is on the base already")
            } else {
                format!("task {task} shipped")
            }
        }
        Event::PostMergeVerified { commit, passed, .. } => format!(
            "the run's checks on {commit:.12} after the merge: {}",
            if *passed { "passed" } else { "FAILED" }
        ),
        Event::ShipFailed { step, message } => format!("{step} failed: {message}"),
        Event::BudgetSpent {
            budget,
            used,
            limit,
        } => format!(
            "{}; the run pauses",
            agentloop_policy::WaitReason::budget_words(budget, *used, *limit)
        ),
        Event::IssueUpdated { task, issue, state } => {
            format!("task {task}: issue {issue} told and moved to {state}")
        }
        Event::ForgeryIgnored(f) => format!(
            "line {} ({} claiming seq {}) was not written by agentloop; ignored",
            f.line, f.kind, f.seq
        ),
        Event::RunFinished { status, reason } => {
            format!("{} · {}", status.as_str(), reason.describe())
        }
    }
}

/// A commit id as people read it.
fn short(id: &str) -> &str {
    &id[..id.len().min(10)]
}

/// A control request in words.
pub fn request(r: &Request) -> String {
    match r {
        Request::Pause => "pause requested".into(),
        Request::Resume => "resume requested".into(),
        Request::Stop => "stop requested (after the current iteration)".into(),
        Request::StopNow => "stop now requested".into(),
        Request::Approve { note, gate } => format!(
            "approved{}{}",
            gate.as_ref()
                .map(|g| format!(" the {g} gate"))
                .unwrap_or_default(),
            note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
        ),
        Request::Reject { note } => format!(
            "rejected{}",
            note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
        ),
        Request::TopUp {
            cost_cents,
            tokens,
            seconds,
            iterations,
        } => {
            let mut parts = Vec::new();
            if let Some(c) = cost_cents {
                parts.push(agentloop_ground::words::money(*c as f64 / 100.0));
            }
            if let Some(t) = tokens {
                parts.push(format!("{t} tokens"));
            }
            if let Some(s) = seconds {
                parts.push(
                    humantime::format_duration(std::time::Duration::from_secs(*s)).to_string(),
                );
            }
            if let Some(i) = iterations {
                parts.push(plural(*i as usize, "iteration", "iterations"));
            }
            format!("budgets topped up: +{}", parts.join(", +"))
        }
        Request::Skip { task, reason } => format!(
            "skip task {task}{}",
            reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        Request::Retry { task } => format!("retry task {task}"),
        Request::SkipSkill { skill, reason } => {
            format!("skip the required skill {skill}: {reason}")
        }
        Request::Debug { task } => format!("debug task {task} next"),
        Request::Steer { note } => format!("note for the next iteration: {note}"),
        Request::AcceptSurface { files } => format!(
            "accept {} of the verification surface as the new baseline",
            agentloop_ground::words::plural(files.len(), "change", "changes")
        ),
    }
}

/// "needs the security, database review", or that no diff gate triggered.
fn gates_words(triggered: &[agentloop_journal::GateTrigger], verb: &str) -> String {
    let mut gates: Vec<&str> = triggered.iter().map(|t| t.gate.as_str()).collect();
    gates.dedup();
    if gates.is_empty() {
        "no diff gate triggered".to_string()
    } else {
        format!("{verb} the {} review", gates.join(", "))
    }
}

/// At a diff gate of a run without a forge: what holds it, a line per file
/// (`T1: src/auth/login.rs:3: the path matches `auth``).
pub(crate) fn held(s: &RunState, gate: &Gate) -> Vec<String> {
    match gate {
        // What a person approves: the plan's clarity and shape, and, when it is not
        // clear enough to run unasked, the questions it leaves open.
        Gate::Plan => {
            let clarity = agentloop_plan::assess(&s.plan);
            let mut out = vec![format!(
                "{}: {} · clarity {} · shape {}",
                s.plan.title,
                agentloop_ground::words::plural(s.plan.tasks.len(), "task", "tasks"),
                clarity.describe(),
                s.settings.shape.as_deref().unwrap_or("tool")
            )];
            if s.settings.shape.as_deref() == Some("intent") {
                out.push(
                    "not clear enough to run unasked; answer these in the plan (and run it again), or approve to go on as it is:"
                        .into(),
                );
                out.extend(clarity.questions().iter().map(|q| format!("- {q}")));
            }
            return out;
        }
        Gate::PlanReview => {
            return agentloop_plan::findings(&s.plan, !s.settings.verify_commands.is_empty())
                .into_iter()
                .map(|f| format!("- {f}"))
                .collect();
        }
        _ => {}
    }
    if let Gate::Tripwire(task) = gate {
        return s
            .tripwire_gate_hits()
            .unwrap_or_default()
            .iter()
            .map(|h| format!("{task}: must not {}: {}", h.wire, h.evidence))
            .collect();
    }
    let Gate::Diff(name) = gate else {
        return Vec::new();
    };
    s.tasks
        .iter()
        .flat_map(|t| {
            t.held.iter().filter(|h| &h.gate == name).map(|h| {
                let at = h.line.map(|l| format!(":{l}")).unwrap_or_default();
                format!("{}: {}{at}: {}", t.id, h.file, h.why)
            })
        })
        .collect()
}

/// What drives an unfinished run that no driver holds, in words: `resume` for a headless
/// run; for a hook-mode run, its Claude Code session (`resume` alone refuses it).
pub(crate) fn goes_on(s: &RunState) -> String {
    if s.settings.hook {
        format!(
            "a message in its Claude Code session goes on with it, or `agentloop resume --headless {}` drives it with the configured agent",
            s.run_id
        )
    } else {
        format!("`agentloop resume {}` drives it", s.run_id)
    }
}
