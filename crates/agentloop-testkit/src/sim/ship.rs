//! Shipping in the simulation: the ship flow's steps as the driver takes them
//! (`driver/ship`), against the simulated forge (`services`). Each call that changes
//! the forge is an effect the driver may die after, before it records what happened;
//! the next driver takes the step again, as the real one does, and the forge answers
//! as GitHub would (an open pull request for the branch is updated, not opened twice;
//! a merged one refuses a second merge and says what it was merged as).
//!
//! What is not simulated: the local git work of a step (the unit's replayed commits,
//! the base branch merged into the project after a red verification there), the
//! forge's pagination and rate limits (the real forge tests have those).

use std::collections::BTreeSet;

use agentloop_config::{MergeWhen, PrScope};
use agentloop_journal::GateTrigger;
use agentloop_journal::{CheckOutcome, Event, Gate, Request, TaskStatus};
use agentloop_policy::{self as policy, ShipStep};

use super::services::{Forge, id};
use super::world::{Killed, World};

impl World<'_> {
    /// One step of the ship flow, then its record (or `ship_failed`).
    pub(super) fn ship(&mut self, step: ShipStep) -> Result<(), Killed> {
        let outcome = match step {
            ShipStep::StartUnit => Ok(self.start_unit()),
            ShipStep::Push => self.push(),
            ShipStep::OpenPr => self.open_pr(),
            ShipStep::AwaitChecks => Ok(self.await_checks()),
            ShipStep::CheckDiffGates => self.diff_gates(),
            ShipStep::ReleaseGates => self.release(),
            ShipStep::Merge => self.merge(),
            ShipStep::PostMergeVerify => Ok(self.post_merge()),
        }?;
        match outcome {
            Ok(event) => self.append(event),
            Err(message) => self.append(Event::ShipFailed {
                step: format!("{step:?}"),
                message,
            }),
        }
    }

    /// A call to the forge: its first try refused when the scenario says so.
    fn forge_call(&mut self, what: String) -> Result<(), String> {
        let refused = self.sc.forge_refuses_first(&what);
        self.call(&what, refused)
    }

    /// The tasks whose work the next push carries: the unit's, or every done task's.
    fn shipped_tasks(&self) -> Vec<String> {
        let committed = |id: &str| {
            self.state
                .task(id)
                .is_some_and(|t| t.status == TaskStatus::Done && t.commit.is_some())
        };
        let mut ids: Vec<String> = match &self.state.ship.unit {
            Some(u) => u.tasks.clone(),
            None => self.state.tasks.iter().map(|t| t.id.clone()).collect(),
        };
        ids.retain(|t| committed(t));
        ids
    }

    /// The commit to push: its tasks' work on where it starts; `None` when a unit
    /// carries nothing (the run's own branch is pushed as it is).
    fn ship_commit(&self) -> Option<String> {
        let tasks = self.shipped_tasks();
        let onto = match &self.state.ship.unit {
            Some(_) if tasks.is_empty() => return None,
            Some(u) => &u.onto,
            None => "run",
        };
        Some(id(&format!("{onto}:{}", tasks.join(","))))
    }

    fn ship_branch(&self) -> String {
        match &self.state.ship.unit {
            Some(u) => u.branch.clone(),
            None => self.state.settings.ship.branch_of(&self.state.run_id),
        }
    }

    fn start_unit(&mut self) -> Result<Event, String> {
        let cfg = &self.state.settings.ship;
        let task = policy::next_unit(&self.state)
            .ok_or("no task is left to ship")?
            .to_string();
        let branch = format!("{}-{task}", cfg.branch_of(&self.state.run_id));
        // Stacked on the last pull request a person has yet to merge.
        let stacked = (cfg.merge == MergeWhen::Manual)
            .then(|| {
                self.state
                    .ship
                    .shipped
                    .iter()
                    .rev()
                    .find(|u| u.pr.is_some() && u.merged.is_none())
                    .and_then(|u| Some((u.branch.clone(), u.commit.clone()?)))
            })
            .flatten();
        let (base, onto) = stacked.unwrap_or_else(|| ("main".into(), self.forge.head()));
        Ok(Event::ShipUnitStarted {
            task,
            branch,
            base,
            onto,
        })
    }

    fn push(&mut self) -> Result<Result<Event, String>, Killed> {
        let Some(commit) = self.ship_commit() else {
            let task = self.state.ship.unit.as_ref().map(|u| u.task.clone());
            return Ok(Ok(Event::TaskShipped {
                task: task.unwrap_or_default(),
                empty: true,
            }));
        };
        let branch = self.ship_branch();
        if let Err(e) = self.forge_call(format!("push {branch} {commit}")) {
            return Ok(Err(e));
        }
        self.forge.branches.insert(branch.clone(), commit.clone());
        self.effect(None)?;
        Ok(Ok(Event::ShipPushed { branch, commit }))
    }

    fn open_pr(&mut self) -> Result<Result<Event, String>, Killed> {
        let cfg = self.state.settings.ship.clone();
        let head = self.ship_branch();
        let base = self
            .state
            .ship
            .unit
            .as_ref()
            .map_or("main".into(), |u| u.base.clone());
        if let Err(e) = self.forge_call(format!("open {head}")) {
            return Ok(Err(e));
        }
        let (number, created) = self.forge.open_or_update(&head, &base);
        self.effect(None)?;
        // As the driver: labelled when new, or new to the journal.
        let recorded = self.state.ship.pr.as_ref().map(|(n, _)| *n);
        if created || recorded != Some(number) {
            if let Some(pr) = self.forge.pr(number) {
                pr.labels.extend(cfg.labels.iter().cloned());
            }
            self.effect(None)?;
            if let Some(pr) = self.forge.pr(number) {
                pr.reviewers.extend(cfg.reviewers.iter().cloned());
            }
            self.effect(None)?;
        }
        Ok(Ok(Event::PrOpened {
            number,
            url: format!("https://forge.sim/pull/{number}"),
            created,
        }))
    }

    fn await_checks(&mut self) -> Result<Event, String> {
        let (commit, _) = self.state.ship.pushed.clone().ok_or("nothing was pushed")?;
        self.now += self.sc.forge_checks_ms(&commit);
        let passed = self.sc.forge_checks_pass(&commit);
        Ok(Event::ChecksFinished {
            checks: vec![CheckOutcome {
                name: "ci".into(),
                conclusion: if passed { "success" } else { "failure" }.into(),
                output: if passed {
                    String::new()
                } else {
                    format!("test suite failed on {commit:.12}")
                },
            }],
            commit,
            passed,
        })
    }

    fn diff_gates(&mut self) -> Result<Result<Event, String>, Killed> {
        let Some((commit, _)) = self.state.ship.pushed.clone() else {
            return Ok(Err("nothing was pushed".into()));
        };
        let gates = self.state.settings.gates.clone();
        let triggered: Vec<GateTrigger> = if gates.database.enabled {
            self.shipped_tasks()
                .into_iter()
                .filter(|t| self.sc.touches_database(t))
                .map(|t| GateTrigger {
                    gate: "database".into(),
                    file: format!("migrations/{}.sql", t.to_lowercase()),
                    line: None,
                    why: "a migration".into(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut names: Vec<String> = triggered.iter().map(|t| t.gate.clone()).collect();
        names.dedup();
        if gates.deploy.enabled && self.state.settings.ship.merge == MergeWhen::Auto {
            names.push("deploy".into());
        }
        names.retain(|n| !self.state.ship.gates_approved.contains(n));
        if let Some((number, _)) = self.state.ship.pr.clone()
            && !names.is_empty()
        {
            if let Err(e) = self.forge_call(format!("label {number} {commit}")) {
                return Ok(Err(e));
            }
            if let Some(pr) = self.forge.pr(number) {
                pr.labels
                    .extend(names.iter().map(|g| format!("needs:{g}-review")));
            }
            self.effect(None)?;
            if let Some(pr) = self.forge.pr(number) {
                pr.comments += 1;
            }
            self.effect(None)?;
        }
        Ok(Ok(Event::DiffGatesChecked { commit, triggered }))
    }

    /// The released gates' labels off the pull request, its account written again.
    fn release(&mut self) -> Result<Result<Event, String>, Killed> {
        let gates = policy::to_release(&self.state);
        let Some((number, _)) = self.state.ship.pr.clone() else {
            return Ok(Err("no pull request to release".into()));
        };
        if let Err(e) = self.forge_call(format!("release {number}")) {
            return Ok(Err(e));
        }
        if let Some(pr) = self.forge.pr(number) {
            for g in &gates {
                pr.labels.remove(&format!("needs:{g}-review"));
            }
        }
        self.effect(None)?;
        Ok(Ok(Event::PrReleased { gates }))
    }

    fn merge(&mut self) -> Result<Result<Event, String>, Killed> {
        let (Some((number, _)), Some((commit, _))) =
            (self.state.ship.pr.clone(), self.state.ship.pushed.clone())
        else {
            return Ok(Err("no pull request to merge".into()));
        };
        if let Err(e) = self.forge_call(format!("merge {number}")) {
            return Ok(Err(e));
        }
        // A driver that died after the forge merged merges again: refused, and the
        // forge says as what it was merged.
        let merged = match self.forge.merge(number, &commit) {
            Ok(head) => {
                self.effect(None)?;
                head
            }
            Err(e) => match self.forge.merged(number) {
                Some(head) => head,
                None => return Ok(Err(e)),
            },
        };
        if self.state.settings.ship.delete_branch {
            let branch = self.ship_branch();
            if self.forge.branches.remove(&branch).is_some() {
                self.effect(None)?;
            }
        }
        Ok(Ok(Event::PrMerged { commit: merged }))
    }

    fn post_merge(&mut self) -> Result<Event, String> {
        let head = self.forge.head();
        self.now += 120_000;
        let passed = self.sc.base_passes(&head);
        Ok(Event::PostMergeVerified {
            digest: (!passed).then(|| format!("sh tests/t.sh: assertion failed on {head:.12}")),
            commit: head,
            passed,
        })
    }

    /// At the review gate or a diff gate: an approval on the forge from one of its
    /// reviewers releases it (the driver asks every `[ship] poll`).
    pub(super) fn poll_review(&mut self) -> Result<(), Killed> {
        let (listed, gate) = match &self.state.gate {
            Some(Gate::Review) => (self.state.settings.ship.reviewers.clone(), None),
            Some(Gate::Diff(g)) => (
                policy::gate_reviewers(&self.state.settings.gates, g).to_vec(),
                Some(g.clone()),
            ),
            _ => return Ok(()),
        };
        let Some((number, _)) = self.state.ship.pr.clone() else {
            return Ok(());
        };
        let by = self.forge.find(number).and_then(|p| {
            p.approvals
                .iter()
                .find(|w| listed.is_empty() || listed.contains(w))
                .cloned()
        });
        match (by, gate) {
            (Some(by), Some(gate)) => self.append(Event::DiffGateApproved { gate, by }),
            (Some(by), None) => self.append(Event::ReviewApproved { by }),
            (None, _) => Ok(()),
        }
    }

    /// The person's answer at a ship gate: the pull request's review approved on the
    /// forge (no line of theirs: the driver reads it there) or with `approve`; a
    /// failed step retried; a base branch red after the merge rejected (the run ends).
    pub(super) fn ship_answer(&mut self, gate: &Gate) -> Option<Request> {
        match gate {
            Gate::Review => {
                let number = self.state.ship.pr.as_ref().map(|p| p.0)?;
                if !self.sc.approves_on_forge(number) {
                    return Some(Request::Approve {
                        note: None,
                        gate: None,
                    });
                }
                let who = self
                    .state
                    .settings
                    .ship
                    .reviewers
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "someone".into());
                if let Some(pr) = self.forge.pr(number) {
                    pr.approvals.push(who);
                }
                None
            }
            Gate::Ship(_) if self.state.ship.failed.is_none() => Some(Request::Reject {
                note: Some("the base branch is red: someone looks at it first".into()),
            }),
            _ => Some(Request::Approve {
                note: None,
                gate: None,
            }),
        }
    }
}

/// What the forge holds at a run's end, as the comparison reads it; an error when it
/// holds what no run may leave: a pull request the journal never recorded, one
/// without its labels and reviewers, a merge of a commit whose checks did not pass,
/// the base branch merged twice with one commit, a merged branch that was to go.
pub(super) fn forge_ending(
    forge: &Forge,
    journal: &[agentloop_journal::Record],
    cfg: &agentloop_config::Ship,
) -> Result<Vec<String>, String> {
    let mut recorded = BTreeSet::new();
    let mut green = BTreeSet::new();
    for rec in journal {
        match &rec.event {
            Event::PrOpened { number, .. } => {
                recorded.insert(*number);
            }
            Event::ChecksFinished {
                commit,
                passed: true,
                ..
            } => {
                green.insert(commit.clone());
            }
            _ => {}
        }
    }
    let mut merged = BTreeSet::new();
    let mut out = Vec::new();
    for pr in &forge.prs {
        if !recorded.contains(&pr.number) {
            return Err(format!(
                "pull request {} from {} is on the forge, and the journal never recorded it",
                pr.number, pr.head
            ));
        }
        let missing: Vec<&String> = (cfg.labels.iter())
            .filter(|l| !pr.labels.contains(*l))
            .chain(cfg.reviewers.iter().filter(|r| !pr.reviewers.contains(*r)))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "pull request {} lacks its labels or reviewers {missing:?}",
                pr.number
            ));
        }
        if let Some((commit, _)) = &pr.merged {
            if let Some(held) = pr.labels.iter().find(|l| l.starts_with("needs:")) {
                return Err(format!(
                    "pull request {} was merged still labelled {held}",
                    pr.number
                ));
            }
            if !green.contains(commit) {
                return Err(format!(
                    "pull request {} was merged at {commit:.12}, whose checks never passed",
                    pr.number
                ));
            }
            if !merged.insert(commit.clone()) {
                return Err(format!("{commit:.12} was merged twice"));
            }
            if cfg.delete_branch && cfg.pr == PrScope::Task && forge.branches.contains_key(&pr.head)
            {
                return Err(format!("the merged branch {} was not deleted", pr.head));
            }
        }
        out.push(format!(
            "#{} {} -> {} merged {} labels {:?}",
            pr.number,
            pr.head,
            pr.base,
            pr.merged.is_some(),
            pr.labels
        ));
    }
    out.push(format!("base {:?}", forge.base));
    Ok(out)
}
