//! What the simulated parts do at each step the driver takes: the agents, their
//! checks, the merges onto the simulated integration branch, the reviewer, and the
//! person at the gates. Each outcome comes from the scenario's script.

use agentloop_ground::signals::Signals;
use agentloop_journal::*;
use agentloop_policy as policy;

use super::scenario::Asking;
use super::world::{Commit, Done, Killed, World};

impl World<'_> {
    /// A planner is asked: recorded, and its answer comes after a while.
    pub(super) fn ask_planner(&mut self, planner: u32, basis: String) -> Result<(), Killed> {
        self.append(Event::PlannerStarted {
            planner,
            basis: basis.clone(),
        })?;
        self.planning += 1;
        let ms = self.sc.planner_ms(self.state.last_seq);
        self.later(ms, Done::Planned(planner, basis));
        Ok(())
    }

    /// A cycle's judge: the simulated one restarts the workers at every other cycle
    /// and otherwise lets the rule decide (the same verdict at each try of a cycle).
    pub(super) fn judge_cycle(&mut self, cycle: u32) -> Result<(), Killed> {
        let (verdict, reasons) = if cycle.is_multiple_of(2) {
            (
                CycleVerdict::Restart,
                vec!["the simulated judge restarts every other cycle".into()],
            )
        } else {
            policy::cycle_rule(&self.state)
        };
        self.append(Event::CycleJudged(CycleJudged {
            cycle,
            verdict,
            reasons,
            by: "sim".into(),
            cost_usd: 0.0,
        }))
    }

    /// A planner's answer, from the plan as it stands, judged by the policy.
    pub(super) fn planner_answers(&mut self, planner: u32, basis: String) -> Result<(), Killed> {
        let ids: Vec<&str> = self.state.plan.ids();
        let text = self.sc.planner_answer(&ids);
        let outcome = policy::planning::review(&self.state, &text);
        self.append(Event::PlannerFinished(PlannerFinished {
            planner,
            basis,
            outcome,
            cost_usd: 0.05,
            duration_ms: 0,
        }))
    }

    pub(super) fn person_asked(&self) -> bool {
        self.pending.iter().any(|p| matches!(p.done, Done::Person))
    }

    pub(super) fn ask_person(&mut self) {
        self.questions += 1;
        let ms = self.sc.answer_ms(self.questions);
        self.later(ms, Done::Person);
    }

    /// A person answers what the run waits for now: approves a gate (rejects a
    /// changed check or a tripwire hit), skips a blocked task, stops a run whose
    /// budget is spent.
    pub(super) fn person_answers(&mut self) -> Result<(), Killed> {
        let id = format!("person-{}", self.questions);
        let request = if let Some(g) = self.state.gate.clone() {
            match g {
                Gate::Surface(_) | Gate::Tripwire(_) => Request::Reject {
                    note: Some("no: the checks and the tripwires stay".into()),
                },
                Gate::Review | Gate::Ship(_) | Gate::Diff(_) => match self.ship_answer(&g) {
                    Some(r) => r,
                    None => return Ok(()),
                },
                _ => Request::Approve {
                    note: None,
                    gate: None,
                },
            }
        } else if self.state.paused {
            Request::Resume
        } else if self.state.budget_spent.is_some() {
            Request::Stop
        } else if let Some(t) = self
            .state
            .tasks
            .iter()
            .find(|t| t.status == TaskStatus::Blocked)
        {
            Request::Skip {
                task: t.id.clone(),
                reason: Some("the simulated person skips it".into()),
            }
        } else {
            return Ok(());
        };
        self.append(Event::Control {
            id,
            source: "cli".into(),
            request,
            by: Some("person@sim".into()),
        })
    }

    /// The scenario's requests whose point has come, each made once.
    pub(super) fn person_requests(&mut self) -> Result<(), Killed> {
        for (i, a) in self.sc.requests.iter().enumerate() {
            let due = match a.at_ms {
                Some(at) => self.now >= super::world::EPOCH_MS + at,
                None => self.state.done_count() >= a.after_done,
            };
            if self.asked.contains(&i) || self.state.is_finished() || !due {
                continue;
            }
            self.asked.insert(i);
            // The last task not started yet.
            let last = self
                .state
                .tasks
                .iter()
                .rev()
                .find(|t| t.status == TaskStatus::Pending && t.iterations == 0)
                .map(|t| t.id.clone());
            let request = match (a.what, last) {
                (Asking::Steer, _) => Request::Steer {
                    note: "keep each change small".into(),
                },
                (Asking::Pause, _) => Request::Pause,
                (Asking::Stop, _) => Request::Stop,
                (Asking::Skip, Some(task)) => Request::Skip {
                    task,
                    reason: Some("the simulated person does not need it".into()),
                },
                (Asking::Debug, Some(task)) => Request::Debug { task },
                (Asking::Skip | Asking::Debug, None) => continue,
            };
            self.append_whole(Event::Control {
                id: format!("asked-{i}"),
                source: "cli".into(),
                request,
                by: Some("person@sim".into()),
            })?;
        }
        Ok(())
    }

    pub(super) fn record_decision(&mut self, e: Event) -> Result<(), Killed> {
        // One worker in the project commits a verified task as it records it.
        let e = match e {
            Event::IterationFinished(mut f)
                if f.outcome == Outcome::Completed
                    && self.state.settings.commit
                    && !self.state.settings.in_worktrees() =>
            {
                f.commit = Some(format!("commit-{}", f.iteration));
                Event::IterationFinished(f)
            }
            e => e,
        };
        self.append(e)
    }

    pub(super) fn start_iteration(&mut self, p: policy::IterationPlan) -> Result<(), Killed> {
        let a = self.sc.attempt(&p.task, p.attempt);
        let worktree = self
            .state
            .settings
            .in_worktrees()
            .then(|| format!(".agentloop/worktrees/{}", p.task));
        self.append(Event::IterationStarted(IterationStarted {
            iteration: p.iteration,
            task: p.task.clone(),
            attempt: p.attempt,
            kind: p.kind,
            agent: p.agent.clone(),
            tree_before: Some(format!("tree-before-{}", p.iteration)),
            head_before: None,
            steer: vec![],
            worktree,
        }))?;
        *self.tries.entry((p.task.clone(), p.attempt)).or_insert(0) += 1;
        self.busy.insert(p.iteration);
        self.work_ms += a.agent_ms;
        self.later(a.agent_ms, Done::Agent(p.iteration));
        Ok(())
    }

    pub(super) fn agent_finished(&mut self, n: u32) -> Result<(), Killed> {
        let Some((task, a)) = self.attempt_of(n) else {
            return Ok(());
        };
        let attempt = self
            .state
            .open_iteration(n)
            .map_or(0, |o| o.started.attempt);
        let first = self.tries.get(&(task.clone(), attempt)) == Some(&1);
        if first && (a.lost || a.limited) {
            let (kind, message) = if a.lost {
                (AgentErrorKind::Lost, "the job was lost with its node")
            } else {
                (
                    AgentErrorKind::RateLimit,
                    "usage limit reached · resets in 1h",
                )
            };
            return self.append(Event::AgentFinished(AgentFinished {
                iteration: n,
                exit_code: Some(1),
                duration_ms: a.agent_ms,
                error: Some(AgentError {
                    kind,
                    message: message.into(),
                }),
                resets_at_ms: (!a.lost).then_some(self.now + 3_600_000),
                ..AgentFinished::default()
            }));
        }
        let mut changed = Vec::new();
        if !a.idle && !a.crashes && !a.asks {
            changed.push(format!("src/{}.rs", task.to_lowercase()));
        }
        if a.tampers {
            changed.push("tests/t.sh".into());
        }
        if a.trips {
            changed.push("migrations/0001.sql".into());
        }
        let tree_after = (!changed.is_empty()).then(|| format!("tree-after-{n}"));
        self.append(Event::AgentFinished(AgentFinished {
            iteration: n,
            exit_code: Some(if a.crashes { 1 } else { 0 }),
            duration_ms: a.agent_ms,
            output_bytes: if a.crashes { 0 } else { 400 },
            signals: Signals {
                complete: a.claims,
                blocked: a.asks.then(|| "which database should it use?".into()),
                ..Signals::default()
            },
            cost_usd: 0.05,
            tree_after,
            changed_files: changed.clone(),
            task_changed: changed,
            ..AgentFinished::default()
        }))
    }

    pub(super) fn check_surface(&mut self, iteration: u32) -> Result<(), Killed> {
        let tampered = self.attempt_of(iteration).is_some_and(|(_, a)| a.tampers);
        let changes = if tampered {
            vec![SurfaceChange {
                path: "tests/t.sh".into(),
                kind: ChangeKind::Modified,
                why: "a test file".into(),
                before: self
                    .state
                    .baseline
                    .as_ref()
                    .and_then(|b| b.get("tests/t.sh").cloned()),
                after: None,
                diff: "-exit 1\n+exit 0".into(),
            }]
        } else {
            Vec::new()
        };
        self.append(Event::SurfaceChecked { iteration, changes })
    }

    pub(super) fn check_tripwires(&mut self, iteration: u32) -> Result<(), Killed> {
        let trips = self.attempt_of(iteration).is_some_and(|(_, a)| a.trips);
        let hits = if trips {
            vec![TripHit {
                wire: "touch migrations/".into(),
                evidence: "migrations/0001.sql changed (migrations/)".into(),
            }]
        } else {
            Vec::new()
        };
        self.append(Event::TripwiresChecked { iteration, hits })
    }

    pub(super) fn checks_finished(&mut self, iteration: u32) -> Result<(), Killed> {
        let Some((task, a)) = self.attempt_of(iteration) else {
            return Ok(());
        };
        let command = format!("sh tests/{}.sh", task.to_lowercase());
        let fp = format!("{task}-fails");
        self.append(Event::VerifyFinished(VerifyFinished {
            iteration,
            passed: a.passes,
            commands: vec![CommandResult {
                command,
                exit_code: Some(if a.passes { 0 } else { 1 }),
                timed_out: false,
                duration_ms: a.checks_ms,
                output_bytes: 100,
                truncated: false,
                measured: None,
                tests: None,
                cause: None,
            }],
            fingerprint: (!a.passes).then(|| fp.clone()),
            digest: (!a.passes).then(|| format!("{fp}: assertion failed")),
            evidence: None,
            held_out: Vec::new(),
            left_out: Vec::new(),
            admitted: Vec::new(),
        }))
    }

    /// As `start_merge`: a merge a dead driver began that is on the branch already is
    /// recorded as merged; the rest of the batch starts (again) from the branch's head.
    pub(super) fn start_merge(&mut self, batch: Vec<u32>) -> Result<(), Killed> {
        let mut members = Vec::new();
        for iteration in batch {
            let Some(open) = self.state.open_iteration(iteration).cloned() else {
                continue;
            };
            if let Some(MergeState::Started { head }) = &open.merge {
                let since: usize = head.parse().unwrap_or(0);
                if self.branch[since.min(self.branch.len())..]
                    .iter()
                    .any(|c| c.iteration == iteration)
                {
                    let commit = format!("merge-{iteration}");
                    self.append(Event::Merged { iteration, commit })?;
                    continue;
                }
            }
            members.push(iteration);
        }
        if members.is_empty() {
            return Ok(());
        }
        let head = self.branch.len().to_string();
        // The batch's checks run once: one run of the project's checks, as long as
        // the head's draw says. A red batch is bisected, each round checking up to
        // `merge_bisect` prefixes at once.
        let mut ms = None;
        let mut red = false;
        for &iteration in &members {
            self.append(Event::MergeStarted {
                iteration,
                head: head.clone(),
            })?;
            self.busy.insert(iteration);
            if let Some((_, a)) = self.attempt_of(iteration) {
                ms.get_or_insert(a.merge_ms);
                red |= a.red_merged;
            }
        }
        let mut ms = ms.unwrap_or(1_000);
        if red && members.len() > 1 {
            let at_once = self.state.settings.merge_bisect.max(1) as usize;
            let (mut span, mut rounds) = (members.len(), 0u64);
            while span > 1 {
                span = span.div_ceil(at_once + 1);
                rounds += 1;
            }
            ms *= 1 + rounds;
        }
        self.later(ms.max(1), Done::Merge(members));
        Ok(())
    }

    /// The merge job's end, as the merge queue's: a conflict fails the batch's first
    /// merge and sends a later one back to the queue; the first task whose work is red
    /// on the merged result fails, the ones before it land (the branch moves, an effect
    /// of its own, before the driver records), the ones after it go back to the queue.
    pub(super) fn merge_finished(&mut self, batch: Vec<u32>) -> Result<(), Killed> {
        let mut merged: Vec<(u32, String, bool)> = Vec::new();
        let mut outcomes: Vec<(u32, Event)> = Vec::new();
        let order = batch.clone();
        for iteration in batch {
            let Some((task, a)) = self.attempt_of(iteration) else {
                continue;
            };
            if !a.conflicts {
                merged.push((iteration, task, a.red_merged));
            } else if merged.is_empty() {
                outcomes.push((
                    iteration,
                    Event::MergeFailed {
                        iteration,
                        conflict: true,
                        reason: format!("{task} conflicts with the integration branch"),
                        digest: "CONFLICT (content): src/lib.rs".into(),
                        fingerprint: Some(format!("{task}-conflict")),
                    },
                ));
            } else {
                outcomes.push((
                    iteration,
                    Event::MergeRequeued {
                        iteration,
                        reason: format!("{task} conflicts with its batch"),
                    },
                ));
            }
        }
        let culprit = merged.iter().position(|m| m.2);
        let lands = culprit.unwrap_or(merged.len());
        if lands > 0 {
            for (iteration, task, _) in &merged[..lands] {
                self.branch.push(Commit {
                    iteration: *iteration,
                    task: task.clone(),
                });
            }
            self.effect(None)?;
        }
        for (k, (iteration, task, _)) in merged.iter().enumerate() {
            let event = match culprit {
                Some(c) if k == c => Event::MergeFailed {
                    iteration: *iteration,
                    conflict: false,
                    reason: format!("on the merged result, {task}'s checks fail"),
                    digest: "assertion failed on the merged result".into(),
                    fingerprint: Some(format!("{task}-merged")),
                },
                Some(c) if k > c => Event::MergeRequeued {
                    iteration: *iteration,
                    reason: format!("merged in a batch after a red one ({task})"),
                },
                _ => Event::Merged {
                    iteration: *iteration,
                    commit: format!("merge-{iteration}"),
                },
            };
            outcomes.push((*iteration, event));
        }
        // Recorded in the batch's order, as the driver records them.
        outcomes.sort_by_key(|(i, _)| order.iter().position(|o| o == i));
        for (_, e) in outcomes {
            self.append(e)?;
        }
        Ok(())
    }

    /// The reviewer's turn, in the driver's own turn as the driver takes it.
    pub(super) fn review(&mut self, iteration: u32) -> Result<(), Killed> {
        let (Some(cfg), Some(open)) = (
            self.state.settings.review.clone(),
            self.state.open_iteration(iteration).cloned(),
        ) else {
            return Ok(());
        };
        let started = policy::review::next_round(&cfg, &open, &[], 40);
        let (reviewer, round, of) = (started.reviewer.clone(), started.round, started.of);
        self.append(Event::ReviewStarted(started))?;
        if reviewer.is_empty() {
            return Ok(());
        }
        let rejected = self
            .attempt_of(iteration)
            .is_some_and(|(_, a)| a.rejected && round == 1);
        self.append(Event::ReviewFinished(ReviewFinished {
            iteration,
            reviewer,
            round,
            of,
            verdict: if rejected {
                ReviewVerdict::Reject
            } else {
                ReviewVerdict::Approve
            },
            findings: if rejected {
                vec![Finding {
                    file: Some("src/lib.rs".into()),
                    line: Some(3),
                    what: "the error case is not handled".into(),
                }]
            } else {
                Vec::new()
            },
            unparsable: false,
            cost_usd: 0.01,
        }))
    }
}
