//! What a run decides from its plan when it is created — its shape (from the plan's
//! clarity), its kind of work, and the gates and phases they imply — and how every
//! later driver of the run keeps them. One place, so `run`, `resume`, hook mode and
//! the simulator derive the run's effective policy the same way.

use super::schema::{ShapeSetting, WorkflowSetting};
use super::settings::Settings;
use agentloop_plan::{Clarity, Plan, Shape, Workflow};

impl Settings {
    /// Takes the run's shape and kind of work from `plan` (or from the configuration
    /// when it names them) and the gates they imply, and returns the plan's clarity.
    /// An `intent` plan starts at plan approval, its questions shown there.
    pub fn decide_from_plan(
        &mut self,
        plan: &Plan,
        shape: ShapeSetting,
        workflow: WorkflowSetting,
    ) -> Clarity {
        let clarity = agentloop_plan::assess(plan);
        let taken = match shape {
            ShapeSetting::Auto => clarity.shape,
            ShapeSetting::Tool => Shape::Tool,
            ShapeSetting::Colleague => Shape::Colleague,
            ShapeSetting::Intent => Shape::Intent,
        };
        let work = match workflow {
            WorkflowSetting::Auto => Some(agentloop_plan::workflow(plan).0)
                .filter(|w| w.taken_from_words())
                .unwrap_or(Workflow::Feature),
            WorkflowSetting::Feature => Workflow::Feature,
            WorkflowSetting::Library => Workflow::Library,
            WorkflowSetting::Bug => Workflow::Bug,
            WorkflowSetting::Refactor => Workflow::Refactor,
        };
        self.shape = Some(taken.as_str().to_string());
        self.clarity = Some(clarity.score);
        self.workflow = Some(work.as_str().to_string());
        self.interface_tasks = agentloop_plan::interface_updates(plan)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        self.apply_decisions();
        clarity
    }

    /// A later driver builds its settings from the configuration and flags again;
    /// what the run decided when it was created (`recorded`: the journal's settings)
    /// holds for it too, with the gates and phases it implies.
    pub fn keep_run_decisions(&mut self, recorded: &Settings) {
        self.shape = recorded.shape.clone();
        self.clarity = recorded.clarity;
        self.workflow = recorded.workflow.clone();
        self.confirm = recorded.confirm;
        self.interface_tasks = recorded.interface_tasks.clone();
        self.apply_decisions();
    }

    /// The gates and phases the shape and kind of work imply: a colleague (or an
    /// intent, not clear enough to run unasked) asks before it starts (the plan, then
    /// its review), after each task and at the end; a library asks before it starts
    /// and at the end, and gates new dependencies; a bug is understood before it is
    /// fixed. A run told to proceed without confirmation asks none of the four.
    fn apply_decisions(&mut self) {
        if matches!(
            self.shape.as_deref(),
            Some(s) if s == Shape::Colleague.as_str() || s == Shape::Intent.as_str()
        ) {
            self.gates.plan_approval = true;
            self.gates.plan_review = true;
            self.gates.after_each = true;
            self.gates.final_review = true;
        }
        match self.workflow.as_deref() {
            Some(w) if w == Workflow::Library.as_str() => {
                self.gates.plan_approval = true;
                self.gates.final_review = true;
                self.gates.external.enabled = true;
                // The external gate reads each task's commit.
                self.commit = true;
            }
            Some(w) if w == Workflow::Bug.as_str() => self.debug_first = true,
            _ => {}
        }
        // An interface update is reviewed as architecture when the gate is on; the gate
        // reads each task's commit. The plan's words do not turn it on.
        if self.gates.architecture.enabled && !self.interface_tasks.is_empty() {
            self.commit = true;
        }
        if !self.confirm {
            self.gates.plan_approval = false;
            self.gates.plan_review = false;
            self.gates.after_each = false;
            self.gates.final_review = false;
        }
    }
}
