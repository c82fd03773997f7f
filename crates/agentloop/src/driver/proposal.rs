//! A planner's proposal held to real checks in the driver (`policy::planning`): the
//! tasks it would add are not taken on their word; their checks run once, on a clean
//! copy of the work as it stands (the integration branch's head with workers, else
//! the project's tree with the verification surface at its baseline), and their
//! held-out checks beside them. A task whose named tests already pass there, whose
//! checks report no tests, or for which nothing fails, is refused with the reason,
//! and the planner asked again is told.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentloop_journal::{Planned, VerifyFinished};
use agentloop_plan::{Plan, Task};
use agentloop_policy::planning::{self, AsItStands};
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::verify;

use super::Driver;

impl Driver {
    /// `outcome` (the policy's reading of a planner's answer), its tasks held to what
    /// their checks show on the work as it stands; their output goes to
    /// `checks.log` in the planner's directory `dir`.
    pub(crate) fn held_to_checks(&mut self, outcome: Planned, dir: &Path) -> Planned {
        let (tasks, plan): (Vec<Task>, Plan) = match &outcome {
            Planned::Added { plan, added, .. } => (
                plan.tasks
                    .iter()
                    .filter(|t| added.contains(&t.id))
                    .cloned()
                    .collect(),
                plan.clone(),
            ),
            Planned::Proposed { tasks } => {
                let mut plan = self.state.plan.clone();
                plan.tasks.extend(tasks.iter().cloned());
                (tasks.clone(), plan)
            }
            _ => return outcome,
        };
        self.progress.note(&format!(
            "running the checks of {} on the work as it stands",
            tasks
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        match self.as_it_stands(&tasks, &plan, dir) {
            Ok(Ok(now)) => {
                match planning::refused_as_it_stands(
                    &tasks,
                    &plan,
                    &now,
                    self.state.settings.evidence,
                ) {
                    Some(reason) => Planned::Refused { reason },
                    None => outcome,
                }
            }
            Ok(Err(reason)) => Planned::Refused { reason },
            Err(reason) => Planned::Failed {
                reason: format!("its tasks' checks could not be run: {reason}"),
            },
        }
    }

    /// What `tasks`' checks (and held-out checks) show on a clean copy of the work as
    /// it stands; `Ok(Err(_))`: why the tasks cannot be held to them (a held-out check
    /// that does not exist); `Err(_)`: why they could not be run.
    fn as_it_stands(
        &mut self,
        tasks: &[Task],
        plan: &Plan,
        planner_dir: &Path,
    ) -> Result<Result<AsItStands, String>, String> {
        let mut commands: Vec<String> = Vec::new();
        let mut held: Vec<String> = Vec::new();
        for t in tasks {
            for c in plan.checks_of(Some(t)) {
                if !commands.contains(&c) {
                    commands.push(c);
                }
            }
            for h in &t.holdout {
                if !held.contains(h) {
                    held.push(h.clone());
                }
            }
        }
        let held_dir = match (&held[..], &self.state.settings.holdout) {
            ([], _) => None,
            (_, None) => {
                return Ok(Err(format!(
                    "held-out checks are named (`Holdout: {}`) but the run has none (`[verify] holdout`)",
                    held.join(", ")
                )));
            }
            (_, Some(dir)) => {
                let dir = self.ws.root.join(dir);
                if let Some(why) = verify::holdout_problem(&dir, &self.ws.root, &held) {
                    return Ok(Err(why));
                }
                Some(dir)
            }
        };
        let first = tasks.first().map_or("", |t| t.id.as_str());
        let dir = self.copy_as_it_stands(first)?;
        // Laid into the project itself, the held-out files would be the agent's to read.
        if held_dir.is_some() && dir == self.ws.root {
            return Ok(Err(
                "held-out checks run only on a clean copy of the work (a git work tree, `[verify] clean_copy = true`)".into(),
            ));
        }
        let name = format!("{}-proposal", self.state.last_seq + 1);
        std::fs::create_dir_all(planner_dir)
            .map_err(|e| format!("{}: {e}", planner_dir.display()))?;
        let log = planner_dir.join("checks.log");
        // Where the next iteration's reports go, as a check of the task would see
        // them: nothing a check reads tells the proposal's run from the task's.
        let reports = self.reports_dir(self.state.iterations + 1);
        let runner = verify::Runner {
            workdir: &dir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(1),
            log: &log,
            wrap: self.check_wrap(&dir, &reports),
            bytecode: self.bytecode(false),
            tests: None,
        };
        let mut last = Instant::now();
        let checks = runner
            .baseline(&reports, &commands, None, &[], || {
                self.should_stop(&mut last)
            })
            .map_err(|e| e.to_string())?
            .ok_or("stopped before its checks ended")?;
        let mut held_out = std::collections::BTreeMap::new();
        if let Some(held_dir) = held_dir {
            // A confined check binds the reports' directory, gone after the checks.
            std::fs::create_dir_all(&reports).map_err(|e| e.to_string())?;
            for n in held {
                let mut result = VerifyFinished {
                    iteration: 0,
                    passed: true,
                    commands: Vec::new(),
                    fingerprint: None,
                    digest: None,
                    evidence: None,
                    held_out: Vec::new(),
                    left_out: Vec::new(),
                    admitted: Vec::new(),
                };
                let h = verify::HeldOut {
                    dir: held_dir.clone(),
                    names: vec![n.clone()],
                    log: self.held_out_logs().join(format!("{name}.log")),
                    reports: reports.join("held-out"),
                };
                runner
                    .held_out(&h, &mut result, || self.should_stop(&mut last))
                    .map_err(|e| e.to_string())?;
                held_out.insert(n, result.passed);
            }
            let _ = std::fs::remove_dir_all(&reports);
        }
        let agent = self.state.settings.agent.clone();
        let _ = self.redactor(&agent).scrub_check_log(&log);
        let to_come = commands
            .iter()
            .filter(|c| {
                agentloop_project::CheckWords::read(&dir, std::slice::from_ref(c))
                    .scripts
                    .iter()
                    .any(|s| !dir.join(s).exists())
            })
            .cloned()
            .collect();
        Ok(Ok(AsItStands {
            checks,
            held_out,
            to_come,
        }))
    }

    /// A clean copy of the work as it stands, where and as a check of the task
    /// (`first`, the first proposed) will see it, so that nothing a check reads tells
    /// the proposal's run from the task's: with workers the integration head in the
    /// place of the task's own copy; with one the run's copy (the project's tree with
    /// the surface at its baseline), refreshed the full way after; the project itself
    /// outside git or without clean copies. What the agents added that the checks
    /// would load on their own is left out, as it is for every judge.
    fn copy_as_it_stands(&mut self, first: &str) -> Result<PathBuf, String> {
        let admission = self.admission(&[]);
        let carry = self.state.settings.carry.clone();
        if let Some(i) = &self.state.integration {
            let copy = CleanCopy::for_run(&self.ws.root, &format!("{}-{first}", self.run.id))
                .ok_or("no state directory (set HOME or XDG_STATE_HOME)")?;
            let tree = agentloop_exec::git::run(
                &self.ws.root,
                &["rev-parse", &format!("{}^{{tree}}", i.head)],
            )?;
            copy.refresh_to(tree.trim(), &carry)?;
            if let Some(a) = &admission {
                agentloop_verify::clean_copy::leave_out_in(&copy.dir, a)?;
            }
            return Ok(copy.dir);
        }
        if !self.state.settings.clean_copy || !agentloop_exec::git::is_repo(&self.ws.root) {
            return Ok(self.ws.root.clone());
        }
        let copy = CleanCopy::for_run(&self.ws.root, &self.run.id)
            .ok_or("no state directory (set HOME or XDG_STATE_HOME)")?;
        // The copy kept in step does not know what this refresh writes.
        self.forget_copy();
        let judge = agentloop_verify::clean_copy::Judge {
            overlay: self.state.baseline.as_ref(),
            admission: admission.as_ref(),
        };
        copy.refresh_judged(judge, &carry)?;
        Ok(copy.dir)
    }
}
