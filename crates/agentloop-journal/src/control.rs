//! How control requests (pause, stop, approve, skip, …) change a run's state.

use super::event::FinishReason;
use super::person::{Gate, Request};
use super::state::{RunState, StopKind};
use super::task::TaskStatus;
use super::tripwire::{TripCheck, TripHit};

impl RunState {
    pub(crate) fn control(&mut self, request: &Request) {
        match request {
            Request::Pause => self.paused = true,
            Request::TopUp {
                cost_cents,
                tokens,
                seconds,
                iterations,
            } => {
                self.top_up.cost_usd += cost_cents.unwrap_or(0) as f64 / 100.0;
                self.top_up.tokens += tokens.unwrap_or(0);
                self.top_up.seconds += seconds.unwrap_or(0);
                self.top_up.iterations += iterations.unwrap_or(0);
                self.budget_spent = None;
            }
            Request::Resume => {
                self.paused = false;
                self.budget_spent = None;
                // A run that ended (stopped, rejected, failed) is taken up again; a
                // stop asked and not yet acted on stays. A live driver acts on a stop
                // before a pause, so only a driver that died between the two leaves
                // both: the stop is what the run would have done.
                if matches!(self.finished, Some(ref r) if *r != FinishReason::Completed) {
                    self.finished = None;
                    self.stop = None;
                    // A validation no agent could mend (a coverage step that wrote no
                    // report) is run again: the person taking the run up has mended
                    // what it needed.
                    if self.validation_not_the_work.take().is_some() {
                        self.validation = None;
                    }
                }
            }
            Request::Stop => {
                if self.stop != Some(StopKind::Now) {
                    self.stop = Some(StopKind::AfterIteration);
                }
            }
            Request::StopNow => self.stop = Some(StopKind::Now),
            Request::Steer { note } => self.steer.push(note.clone()),
            Request::AcceptSurface { files } => self.accept_surface(files),
            Request::Approve {
                note,
                gate: Some(named),
            } => {
                if let Some(n) = note.as_ref().filter(|n| !n.trim().is_empty()) {
                    self.steer.push(n.clone());
                }
                self.approve_diff_gate(named);
            }
            Request::Approve { note, gate: None } => {
                let Some(gate) = self.gate.take() else { return };
                if let Some(n) = note.as_ref().filter(|n| !n.trim().is_empty()) {
                    self.steer.push(n.clone());
                }
                match gate {
                    Gate::Plan => self.plan_approved = true,
                    Gate::PlanReview => self.plan_reviewed = true,
                    Gate::Final => self.final_approved = true,
                    Gate::BeforeTask(t) => {
                        if let Some(t) = self.task_mut(&t) {
                            t.gate_before_approved = true;
                        }
                    }
                    Gate::AfterTask(t) => {
                        if let Some(t) = self.task_mut(&t) {
                            t.gate_after_pending = false;
                            t.observed = true;
                        }
                    }
                    Gate::Surface(t) => self.surface_approved(&t),
                    Gate::Tripwire(t) => self.tripwires_approved(&t),
                    Gate::Review => self.ship.approved = true,
                    Gate::Ship(_) => {
                        self.ship.failed = None;
                        // After a failed verification of the merge: verify again.
                        if self.ship.post_merge == Some(false) {
                            self.ship.post_merge = None;
                        }
                    }
                    Gate::Diff(g) => self.approve_diff_gate(&g),
                    Gate::NewTasks => self.new_tasks_approved(),
                }
            }
            Request::Reject { note } => {
                let Some(gate) = self.gate.take() else { return };
                let why = note.clone().unwrap_or_else(|| "no reason given".into());
                match &gate {
                    // A task's diff held it: the task goes back to its agent.
                    Gate::Diff(g)
                        if self
                            .tasks
                            .iter()
                            .any(|t| t.held.iter().any(|h| &h.gate == g)) =>
                    {
                        for t in &mut self.tasks {
                            if t.held.iter().any(|h| &h.gate == g) {
                                t.status = TaskStatus::Pending;
                                t.held.clear();
                                t.diff_checked = false;
                                t.completed_iteration = None;
                                t.reset_ladder();
                                t.last_digest = Some(format!(
                                    "A person reviewed what this task changed (the {g} review) and rejected it: {why}. Its commit stays in the history: change or undo what was rejected."
                                ));
                            }
                        }
                        self.steer.push(format!("Reviewer ({g}): {why}"));
                    }
                    Gate::Plan
                    | Gate::PlanReview
                    | Gate::Final
                    | Gate::Review
                    | Gate::Ship(_)
                    | Gate::Diff(_) => {
                        self.finished = Some(FinishReason::Rejected {
                            gate: gate.clone(),
                            note: note.clone(),
                        });
                    }
                    Gate::BeforeTask(t) => {
                        if let Some(t) = self.task_mut(t) {
                            t.status = TaskStatus::Blocked;
                            t.blocked =
                                Some(format!("rejected by a person before it started: {why}"));
                        }
                    }
                    Gate::AfterTask(t) => {
                        if let Some(t) = self.task_mut(t) {
                            t.status = TaskStatus::Pending;
                            t.gate_after_pending = false;
                            t.completed_iteration = None;
                            t.reset_ladder();
                            t.last_digest =
                                Some(format!("A person reviewed the work and rejected it: {why}"));
                        }
                        self.steer.push(format!("Reviewer: {why}"));
                    }
                    Gate::Surface(t) => self.surface_rejected(t, note.clone()),
                    Gate::Tripwire(t) => self.tripwires_rejected(t, note.clone()),
                    Gate::NewTasks => self.new_tasks_rejected(note.as_deref()),
                }
            }
            Request::Skip { task, reason } => {
                if let Some(t) = self.task_mut(task)
                    && t.status != TaskStatus::Done
                {
                    t.status = TaskStatus::Skipped;
                    t.skip_reason = reason.clone();
                    t.gate_after_pending = false;
                }
                if matches!(&self.gate, Some(Gate::BeforeTask(t) | Gate::AfterTask(t) | Gate::Surface(t) | Gate::Tripwire(t)) if t == task)
                {
                    self.gate = None;
                }
            }
            Request::SkipSkill { skill, reason } => {
                self.skills_skipped.insert(skill.clone(), reason.clone());
            }
            Request::Debug { task } => {
                if let Some(t) = self.task_mut(task) {
                    t.debug_requested = true;
                }
            }
            Request::Retry { task } => {
                if let Some(t) = self.task_mut(task) {
                    t.status = TaskStatus::Pending;
                    t.completed_iteration = None;
                    t.gate_after_pending = false;
                    // Done again later, it is read (and observed) again.
                    t.held.clear();
                    t.observed = false;
                    t.diff_checked = false;
                    // A person's retry gives the reviewer's rounds afresh.
                    t.review_rejections = 0;
                    t.reset_ladder();
                    t.clear_history();
                }
                if matches!(&self.gate, Some(Gate::BeforeTask(t) | Gate::AfterTask(t) | Gate::Surface(t) | Gate::Tripwire(t)) if t == task)
                {
                    self.gate = None;
                }
                // A diff gate that held only this task has nothing left to hold.
                if let Some(Gate::Diff(g)) = &self.gate
                    && !self.settings.ship.enabled()
                    && !self
                        .tasks
                        .iter()
                        .any(|t| t.held.iter().any(|h| &h.gate == g))
                {
                    self.gate = None;
                }
            }
        }
    }
}

impl RunState {
    /// The baseline takes these files at these versions (`None`: gone).
    pub(super) fn accept_surface(
        &mut self,
        files: &std::collections::BTreeMap<String, Option<super::baseline::SurfaceFile>>,
    ) {
        if let Some(base) = &mut self.baseline {
            for (path, f) in files {
                match f {
                    Some(f) => base.insert(path.clone(), f.clone()),
                    None => base.remove(path),
                };
            }
        }
    }

    /// Who passed which gate, when `request` approved one (`open`: the gate that was
    /// open before it).
    pub(super) fn approved(&mut self, request: &Request, open: Option<&Gate>, by: Option<&str>) {
        let Request::Approve { gate: named, .. } = request else {
            return;
        };
        let what = match (named, open) {
            (Some(g), _) => format!("the {g} review"),
            (None, Some(g)) => g.short(),
            (None, None) => return,
        };
        self.approvals
            .push(format!("{what} by {}", by.unwrap_or("someone")));
    }
}

/// The tripwire gate: the open iteration's check, and a person's answer at it
/// (approve: the hits are accepted for the task; reject: the iteration fails and the
/// task goes back to its agent with the evidence).
impl RunState {
    pub(super) fn tripwires_checked(&mut self, iteration: u32, hits: &[TripHit]) {
        if let Some(open) = self.open_mut(iteration) {
            open.tripwires = Some(TripCheck {
                hits: hits.to_vec(),
                settled: hits.is_empty(),
                rejected: None,
            });
        }
    }

    /// The hits a person is asked about at the tripwire gate, while it is open.
    pub fn tripwire_gate_hits(&self) -> Option<&[TripHit]> {
        let Some(Gate::Tripwire(task)) = &self.gate else {
            return None;
        };
        Some(&self.open_of_task(task)?.tripwires.as_ref()?.hits)
    }

    /// A person accepted what the task's iteration did: these tripwires no longer stop
    /// this task.
    pub(super) fn tripwires_approved(&mut self, task: &str) {
        let mut wires = Vec::new();
        if let Some(check) = self
            .open_of_task_mut(task)
            .and_then(|o| o.tripwires.as_mut())
        {
            check.settled = true;
            wires = check.hits.iter().map(|h| h.wire.clone()).collect();
        }
        if let Some(t) = self.task_mut(task) {
            for w in wires {
                if !t.tripwires_accepted.contains(&w) {
                    t.tripwires_accepted.push(w);
                }
            }
        }
    }

    pub(super) fn tripwires_rejected(&mut self, task: &str, note: Option<String>) {
        if let Some(check) = self
            .open_of_task_mut(task)
            .and_then(|o| o.tripwires.as_mut())
        {
            check.rejected = Some(note.unwrap_or_else(|| "no reason given".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{Event, FinishReason, RunStatus};
    use crate::person::Request;
    use crate::state::RunState;
    use crate::testing::then;

    fn run() -> RunState {
        crate::testing::created(
            "# P\n\n## T1: One\nVerify: true\n",
            agentloop_config::Settings::from_config(&Default::default()),
        )
    }

    fn asks(s: &mut RunState, request: Request) {
        then(
            s,
            Event::Control {
                id: format!("c{}", s.last_seq),
                source: "cli".into(),
                request,
                by: None,
            },
        );
    }

    /// Found by the simulator: a stop, then a pause, a driver dead before it read
    /// either, and `resume` (which takes the pause away) — the stop stays, as a live
    /// driver would have acted on it. A run that ended stopped is taken up again.
    #[test]
    fn resume_takes_a_pause_away_not_a_stop_asked_before_it() {
        let mut s = run();
        asks(&mut s, Request::Stop);
        asks(&mut s, Request::Pause);
        asks(&mut s, Request::Resume);
        assert!(!s.paused);
        assert!(s.stop.is_some());
        then(
            &mut s,
            Event::RunFinished {
                status: RunStatus::Stopped,
                reason: FinishReason::StopRequested,
            },
        );
        assert!(s.is_finished());
        asks(&mut s, Request::Resume);
        assert!(!s.is_finished());
        assert!(s.stop.is_none());
    }

    /// A run that failed on a validation no agent could mend validates again when a
    /// person takes it up.
    #[test]
    fn resume_validates_again_what_no_agent_could_mend() {
        let mut s = run();
        then(
            &mut s,
            Event::Validated {
                passed: false,
                commands: vec![],
                digest: Some("The coverage step: no report".into()),
                not_the_work: Some("the coverage step: no report".into()),
            },
        );
        then(
            &mut s,
            Event::RunFinished {
                status: RunStatus::Failed,
                reason: FinishReason::Error {
                    message: "validation cannot pass".into(),
                },
            },
        );
        asks(&mut s, Request::Resume);
        assert!(!s.is_finished());
        assert_eq!(s.validation, None);
        assert_eq!(s.validation_not_the_work, None);
    }
}
