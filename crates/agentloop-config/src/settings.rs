//! The run's settings: what the policy needs from the configuration, frozen into the
//! journal when a run is created and when a driver starts, so a replay decides the same
//! way and `resume` keeps what the run was started with.

use serde::{Deserialize, Serialize};

use super::schema::Config;
use agentloop_ground::values::{Breakers, Budgets, Gates, Limits, Notify};
use agentloop_plan::Mode;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub agent: String,
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_agent: Option<String>,
    pub completion_promise: String,
    pub budgets: Budgets,
    pub breakers: Breakers,
    pub gates: Gates,
    pub verify_commands: Vec<String>,
    pub test_patterns: Vec<String>,
    pub protected: Vec<String>,
    #[serde(default)]
    pub on_protected_change: agentloop_ground::values::OnProtectedChange,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_files: Vec<String>,
    /// Verification runs on a clean copy (runs recorded before it existed did not).
    #[serde(default)]
    pub clean_copy: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carry: Vec<String>,
    /// Checks are judged from their runners' per-test reports where they have one
    /// (runs recorded before it existed: by exit code).
    #[serde(default)]
    pub evidence: bool,
    /// How the run-wide checks judge a task (runs recorded before it existed: by
    /// exit code).
    #[serde(default = "exit_code")]
    pub regression: agentloop_ground::values::Regression,
    /// Tests whose failures are forgiven as flaky.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
    /// `[review]` as the run started, when any task is reviewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ReviewConfig>,
    /// The held-out checks' directory (`[verify] holdout`), `~` expanded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<String>,
    /// The shape the run took (`tool`, `colleague`) and the plan's clarity score when
    /// it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarity: Option<u8>,
    /// The kind of work the run took (`library`, `bug`, `feature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Gates of confirmation are asked (`false`: `run --yes`, or the plan's
    /// `proceed: without confirmation`).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub confirm: bool,
    /// The plan's interface updates (their diffs reviewed as architecture), as the run
    /// decided when it was created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interface_tasks: Vec<String>,
    /// Each task starts with a DEBUG iteration (the bug workflow).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub debug_first: bool,
    /// How agent processes are confined (runs recorded before it existed: not).
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxConfig,
    /// Under the sandbox, each agent's own hosts (its provider, the endpoints its
    /// environment and its CLI's config file name), read when the run was created: an
    /// agent that edits its own config file cannot widen them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agent_hosts: std::collections::BTreeMap<String, Vec<String>>,
    /// The VALIDATE phase after the last task (runs recorded before it existed: none).
    #[serde(default)]
    pub validate: bool,
    #[serde(default)]
    pub validate_fixes: u32,
    /// The VALIDATE phase's own steps (`[validate]`): (what, command).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validate_steps: Vec<(String, String)>,
    pub commit: bool,
    /// Agents at work at once (1: in the working tree; more: worktrees and the merge
    /// queue).
    #[serde(default = "one")]
    pub workers: u32,
    /// `[run] planners`: planner agents that grow the plan (runs recorded before it
    /// existed: none), and the agent they run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub planners: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_agent: Option<String>,
    /// `[run] cycle` and `[run] judge` (runs recorded before they existed: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<crate::cycle::Cycle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// `[merge] batch`: verified tasks merged and checked together (runs recorded
    /// before it existed: one at a time).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub merge_batch: u32,
    /// `[merge] bisect`: checks at once while a red batch is bisected (runs recorded
    /// before it existed: one).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub merge_bisect: u32,
    /// The integration branch of a run with workers (`{run}`: the run id).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub branch: String,
    #[serde(default)]
    pub land: agentloop_ground::values::Land,
    /// One worker in a worktree, through the merge queue.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolate: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_worktrees: bool,
    #[serde(default)]
    pub limits: Limits,
    /// The run is driven by Claude Code's hooks inside one interactive session.
    #[serde(default)]
    pub hook: bool,
    #[serde(default)]
    pub notify: Notify,
    /// How the completed run is shipped (`[ship]`; runs recorded before it existed: not).
    #[serde(default)]
    pub ship: super::ship::Ship,
    /// The issue tracker whose issues' status the run keeps in step (`[tracker]`).
    #[serde(default)]
    pub tracker: super::ship::Tracker,
    /// Files every prompt names for the agent to read first (the project's own
    /// instructions found when the run started, and `[prompt] context`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// The skills each phase requires, found when the run started (phase → skills).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub skills: std::collections::BTreeMap<String, Vec<super::skills::Skill>>,
    /// Hook mode: how long a run waits to be claimed by a session that does not name it.
    #[serde(
        default = "default_claim_window",
        with = "agentloop_ground::values::duration"
    )]
    pub claim_window: std::time::Duration,
    /// Hook mode with agent teams: the TaskCompleted hook checks a teammate's task.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub task_gate: bool,
    /// The command-line layer of the configuration (`--agent`, `--mode`, …) this run
    /// works with: `resume` and hook mode rebuild the configuration with it, and a flag
    /// given to `resume` is merged in and recorded with the new driver.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub flags: serde_json::Map<String, serde_json::Value>,
}

impl Settings {
    /// The settings of a configuration built with the command-line layer `flags`.
    pub fn new(c: &Config, flags: serde_json::Map<String, serde_json::Value>) -> Settings {
        Settings {
            flags,
            ..Settings::from_config(c)
        }
    }

    pub fn from_config(c: &Config) -> Settings {
        Settings {
            agent: c.run.agent.clone(),
            mode: c.run.mode,
            fallback_agent: c.run.fallback_agent.clone().filter(|f| f != &c.run.agent),
            completion_promise: c.run.completion_promise.clone(),
            budgets: c.budgets.clone(),
            breakers: c.breakers.clone(),
            gates: c.gates.clone(),
            verify_commands: c.verify.commands.clone(),
            test_patterns: c.verify.test_patterns.clone(),
            protected: c.verify.protected.clone(),
            on_protected_change: c.verify.on_protected_change,
            check_files: c.verify.check_files.clone(),
            clean_copy: c.verify.clean_copy,
            carry: c.verify.carry.clone(),
            evidence: true,
            regression: c.verify.regression,
            flaky: c.verify.flaky.clone(),
            holdout: c
                .verify
                .holdout
                .as_deref()
                .map(agentloop_ground::fsutil::expand_home),
            review: c.review.on().then(|| c.review.clone()),
            shape: None,
            clarity: None,
            workflow: None,
            confirm: c.run.confirm,
            interface_tasks: Vec::new(),
            debug_first: false,
            // The held-out checks are hidden from a sandboxed agent.
            sandbox: {
                let mut s = c.sandbox.clone();
                s.hidden.extend(c.verify.holdout.iter().cloned());
                s
            },
            agent_hosts: Default::default(),
            validate: c.verify.validate,
            validate_fixes: c.verify.validate_fixes,
            validate_steps: c.validate.steps(),
            // What is shipped is committed: `[ship]` commits each verified task; so do
            // the diff gates, which read what each task's commit changed.
            commit: c.git.commit || c.ship.enabled() || c.gates.any_diff_gate(),
            workers: c.run.workers(),
            planners: c.run.planners,
            planner_agent: c.run.planner_agent.clone(),
            cycle: c
                .run
                .cycle
                .as_deref()
                .and_then(|s| crate::cycle::Cycle::parse(s).ok()),
            judge: c.run.judge.clone(),
            merge_batch: c.merge.batch_for(c.run.workers()).max(1),
            merge_bisect: c.merge.bisect_here().max(1),
            branch: c.run.branch.clone(),
            land: c.run.land,
            // A job elsewhere works on a task's branch: always in worktrees.
            isolate: c.run.isolate || c.executor.kind != crate::executor::ExecutorKind::Local,
            keep_worktrees: c.run.keep_worktrees,
            limits: c.limits.clone(),
            hook: false,
            notify: c.notify.clone(),
            ship: c.ship.clone(),
            tracker: c.tracker.clone(),
            context: c.prompt.context.clone(),
            skills: Default::default(),
            claim_window: c.hook.claim_window,
            task_gate: c.hook.task_gate,
            flags: serde_json::Map::new(),
        }
    }
}

impl Settings {
    /// Adds the project's own instructions for agents found in `root` to the context
    /// the prompts name, and drops configured files that do not exist there.
    pub fn find_context(&mut self, root: &std::path::Path) {
        let mut found: Vec<String> = super::ship::CONTEXT_FILES
            .iter()
            .filter(|f| root.join(f).is_file())
            .map(|f| f.to_string())
            .collect();
        for f in &self.context {
            if root.join(f).exists() && !found.contains(f) {
                found.push(f.clone());
            }
        }
        self.context = found;
    }

    /// Tasks run in worktrees and reach the integration branch through the merge
    /// queue (several workers, or one isolated from the working tree).
    pub fn in_worktrees(&self) -> bool {
        self.workers > 1 || self.isolate
    }
}

fn exit_code() -> agentloop_ground::values::Regression {
    agentloop_ground::values::Regression::ExitCode
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn default_claim_window() -> std::time::Duration {
    super::schema::HookConfig::default().claim_window
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
