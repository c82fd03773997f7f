//! The shape of `agentloop.toml`: every section, its keys and their defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use agentloop_ground::values::{Breakers, Budgets, Gates, Limits, Notify, Usage, duration};
use agentloop_plan::Mode;

pub use crate::agent::AgentConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub run: RunConfig,
    pub budgets: Budgets,
    pub breakers: Breakers,
    pub verify: VerifyConfig,
    pub gates: Gates,
    pub git: GitConfig,
    pub hook: HookConfig,
    pub limits: Limits,
    #[schemars(schema_with = "crate::bounds::agents")]
    pub agents: BTreeMap<String, AgentConfig>,
    /// USD per million tokens, by model, for agents that report tokens but no cost.
    pub prices: BTreeMap<String, Price>,
    pub notify: Notify,
    pub ship: super::ship::Ship,
    pub tracker: super::ship::Tracker,
    pub prompt: super::ship::PromptConfig,
    /// `[sandbox]`: each agent process confined to its working directory.
    pub sandbox: crate::sandbox::SandboxConfig,
    /// `[executor]`: where agent iterations run (this machine, or a cluster).
    pub executor: super::executor::ExecutorConfig,
    /// `[store]`: where runs' journals are kept besides their files.
    pub store: StoreConfig,
    /// `[review]`: an independent reviewer of each verified task.
    pub review: super::review::ReviewConfig,
    /// The VALIDATE phase's own steps, beside every done task's checks.
    #[serde(default)]
    pub validate: ValidateConfig,
    /// `[merge]`: how a run with workers merges verified tasks onto its integration
    /// branch.
    pub merge: MergeConfig,
}

/// `[merge]`: the merge queue of a run with workers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MergeConfig {
    /// Verified tasks merged together and checked once on the merged result: up to this
    /// many of those waiting in the queue. A batch whose checks fail is bisected until
    /// the task that broke it is found; that task goes back to its agent, the ones
    /// before it land, the ones after it wait for the next batch. 1: one at a time.
    /// Unset: half the workers, at least 16.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1024))]
    pub batch: Option<u32>,
    /// Checks run at the same time while a red batch is bisected, each on a prefix of
    /// the batch in a merge worktree of its own (a search in that many parts instead of
    /// halves). Unset: half this machine's cores, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub bisect: Option<u32>,
}

impl MergeConfig {
    /// The batch size for `workers` workers.
    pub fn batch_for(&self, workers: u32) -> u32 {
        self.batch.unwrap_or((workers / 2).max(16))
    }

    /// The checks a bisection runs at once on this machine.
    pub fn bisect_here(&self) -> u32 {
        self.bisect.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            (cores / 2).max(1)
        })
    }
}

/// `[store]`: with `url`, each run's journal is kept in that PostgreSQL database (its
/// file in the run's directory becomes a copy), for runs whose driver, workers and
/// dashboard are on different machines. `AGENTLOOP_STORE_URL` in the environment
/// wins over it (a URL with a password belongs there, not in a file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// The PostgreSQL database (`postgres://user@host:5432/db`); a password belongs
    /// in `AGENTLOOP_STORE_URL`, not in a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long one exchange with the store may take (reconnections included) before
    /// it is taken for down: the driver stops (exit 7) and `status` reads this
    /// machine's copy. Default 45s.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "agentloop_ground::values::opt_duration"
    )]
    #[schemars(schema_with = "duration::schema")]
    pub timeout: Option<std::time::Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Dollars per million input tokens.
    pub input: f64,
    /// Dollars per million cached input tokens (cache reads and writes).
    #[serde(default)]
    pub cached_input: f64,
    /// Dollars per million output tokens.
    pub output: f64,
}

impl Price {
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + (u.cached_input_tokens + u.cache_write_tokens) as f64 * self.cached_input
            + u.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Agent used for tasks that name none.
    pub agent: String,
    /// `quick`, `tdd` (the diff must touch tests), `pair` (a gate after every task),
    /// `checkpoint` (a gate after milestones) or `swarm` (quick, with 4 workers).
    pub mode: Mode,
    /// Agent tried when a task keeps failing with the main one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_agent: Option<String>,
    /// The text inside `<promise>…</promise>` that counts as a completion claim.
    pub completion_promise: String,
    /// Agents at work at once, each task in its own git worktree, merged through the
    /// verified merge queue onto the run's integration branch (1: the agent works in
    /// this working tree, as always; unset: 4 in swarm mode, else 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub workers: Option<u32>,
    /// The integration branch of a run with workers (`{run}` is the run id).
    #[schemars(regex(pattern = r"\{run\}"))]
    pub branch: String,
    /// One worker, but in a worktree on the integration branch, through the merge
    /// queue, as with several: you can go on working in this tree meanwhile.
    pub isolate: bool,
    /// Keep each task's worktree and branch after it is merged (for inspection;
    /// `agentloop gc` removes them once the run is over).
    pub keep_worktrees: bool,
    /// What happens to your checked-out branch when a run with workers completes:
    /// `none` (the work waits on the integration branch) or `ff` (fast-forwarded to
    /// it, refused if it moved meanwhile).
    pub land: agentloop_ground::values::Land,
    /// The shape of work, which sets the gates a run adds: `tool` (none), `colleague`
    /// (approve the plan, accept its review, review each task, review before
    /// completion), `intent` (not clear enough to run unasked: the colleague's gates,
    /// the plan's open questions shown at the first), or `auto` (from the plan's
    /// clarity score: the default).
    pub shape: ShapeSetting,
    /// Ask a person at the gates of confirmation (plan approval, the plan's review,
    /// after each task, the final review), whoever added them; `false` (`run --yes`, or
    /// `proceed: without confirmation` in the plan's front matter) runs without them.
    /// The gates of risk stay: diff gates, irreversible tasks, the verification surface,
    /// tripwires, assumptions.
    pub confirm: bool,
    /// The kind of work, and the gates it implies: `library` (choosing a library or a
    /// dependency: plan approval, the external diff gate, a final review), `bug`
    /// (root-causing one: a DEBUG iteration first in each task), `refactor` (every
    /// prompt says to delete before redesigning), `feature` (none), or `auto` (the
    /// plan's title and goal suggest one; only `refactor` is taken unasked).
    pub workflow: WorkflowSetting,
    /// Planner agents that grow the plan while workers run (0: the plan is what it
    /// was, unless an agent asks for a REPLAN). Each is given the goal, the plan so
    /// far, what is done and what failed, in a throwaway copy of the work so far, and
    /// proposes new tasks (with their checks and dependencies); what it changes in
    /// the copy is thrown away. A plan may then start with only its goal.
    #[schemars(range(max = 16))]
    pub planners: u32,
    /// The agent planners run (default: `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner_agent: Option<String>,
    /// Judge the run at the end of each cycle — `"10 tasks"` (done) or a duration
    /// (`"1h"`) — and go on, stop, or restart the workers fresh from the integration
    /// branch (unset: no cycles).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::bounds::cycle")]
    pub cycle: Option<String>,
    /// The agent that judges each cycle (unset: a rule — go on while tasks get done;
    /// restart once when a whole cycle did none; then stop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum WorkflowSetting {
    #[default]
    Auto,
    Feature,
    Library,
    Bug,
    Refactor,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ShapeSetting {
    Tool,
    Colleague,
    Intent,
    #[default]
    Auto,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Commands run after every task's own commands.
    pub commands: Vec<String>,
    /// How long one check may run before it counts as failed.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::nonzero_schema")]
    pub timeout: Duration,
    /// Bytes of output kept per command (head and tail).
    pub output_cap: u64,
    /// Path patterns that count as tests for `tdd` mode.
    pub test_patterns: Vec<String>,
    /// Paths the agent must not change, on top of the built-in verification surface
    /// (a pattern ending in `/` is a directory).
    pub protected: Vec<String>,
    /// What a change to the verification surface does: `gate` (a person approves or
    /// rejects it), `restore` (agentloop puts the baseline back and tells the agent)
    /// or `allow` (only the iteration's own diff is checked against `protected`).
    pub on_protected_change: agentloop_ground::values::OnProtectedChange,
    /// More files that configure or intercept the checks and count even when new
    /// (names like `conftest.py`, paths, or directories ending in `/`).
    pub check_files: Vec<String>,
    /// Verify on a clean copy of the agent's result (a detached git worktree outside
    /// the project), not in the working tree with whatever else is lying there.
    pub clean_copy: bool,
    /// Ignored directories of the project the clean copy uses as they are (linked,
    /// not copied), like `node_modules` or `.venv`: trusted, not judged.
    pub carry: Vec<String>,
    /// After the last task, run every done task's checks and `commands` again on the
    /// whole project (the VALIDATE phase); a failure reopens work.
    pub validate: bool,
    /// Fix tasks a failed validation hands the agent before the run gives up.
    pub validate_fixes: u32,
    /// How `commands` judge a task: `per-test` (a regression check: tests that
    /// passed at the baseline must still pass) or `exit-code` (the command must exit 0).
    pub regression: agentloop_ground::values::Regression,
    /// Tests whose failures are forgiven as flaky (ids or globs, as in `Tests:`).
    pub flaky: Vec<String>,
    /// Held-out checks: a directory outside the project holding the checks tasks
    /// name in `Holdout:` lines (`NAME.sh`) and the files they need (`files/`, laid
    /// into the clean copy only while they run). Never in the prompt, the worktree
    /// or the sandbox; the agent learns only that one failed, and its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holdout: Option<String>,
    /// Processes or threads one check's test runner may use: pytest's workers with
    /// pytest-xdist (when the check's Python has it), `go test -p`, jest's
    /// `--maxWorkers`, nextest's and libtest's test threads. Unset: the machine's
    /// cores shared among the checks that may run at once (one per worker), and pytest
    /// split only when its run at the baseline took 2 s or more at 3 ms or more a
    /// test. A runner not named here runs as it is; `1` runs every suite as one
    /// process.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub jobs: Option<u32>,
    /// The largest file, in bytes, the work may add or change (0: no limit): one
    /// larger fails the verification, before anything copies, hashes or commits it.
    /// The default is GitHub's limit for a file, 100 MiB.
    pub max_file_size: u64,
}

/// The workers one check's runner may use: `[verify] jobs`, or what it comes to when
/// unset. `n` 0: as the runner chooses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckJobs {
    pub n: u32,
    /// A person set `[verify] jobs`: pytest is split among pytest-xdist's workers
    /// whatever its suite (unset: only a suite the baseline found worth splitting).
    pub said: bool,
}

impl VerifyConfig {
    /// What [`VerifyConfig::jobs`] comes to when `lanes` checks may run at once.
    pub fn jobs_for(&self, lanes: u32) -> CheckJobs {
        match self.jobs {
            Some(n) => CheckJobs { n, said: true },
            None => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
                CheckJobs {
                    n: (cores / lanes.max(1)).max(1),
                    said: false,
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// Commit the working tree after each verified task.
    pub commit: bool,
}

/// The VALIDATE phase's built-in steps (seed 004's completion criteria): commands run
/// on the whole project after the last task, after every done task's checks, and
/// judged as checks are (exit 0, or the tests' own reports); a failure reopens work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(transform = crate::bounds::validate)]
pub struct ValidateConfig {
    /// A security step (`cargo audit`, `npm audit --audit-level=high`, `bandit -r src`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::NOT_BLANK))]
    pub security: Option<String>,
    /// A performance step (a benchmark that exits non-zero when it is too slow).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::NOT_BLANK))]
    pub performance: Option<String>,
    /// A coverage step: the project's tests under its coverage tool
    /// (`pytest --cov --cov-report=json`, `cargo llvm-cov --lcov --output-path
    /// lcov.info`, `go test -coverprofile=coverage.out ./...`, `npx jest --coverage
    /// --coverageReporters=json-summary`); its report becomes the run's
    /// `coverage.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::NOT_BLANK))]
    pub coverage: Option<String>,
    /// Where the coverage step writes its report, relative to the project (unset: the
    /// first of coverage.json, coverage/coverage-summary.json, lcov.info,
    /// coverage/lcov.info, coverage.out that it wrote).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage_report: Option<String>,
    /// The least coverage, in percent of lines, that validates: below it VALIDATE
    /// fails and reopens work.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub coverage_min: Option<f64>,
}

/// Where coverage tools write their reports by default, in the order agentloop looks.
pub const COVERAGE_REPORTS: [&str; 5] = [
    "coverage.json",
    "coverage/coverage-summary.json",
    "lcov.info",
    "coverage/lcov.info",
    "coverage.out",
];

impl ValidateConfig {
    /// The steps that are set: (what, command).
    pub fn steps(&self) -> Vec<(String, String)> {
        [
            ("security", &self.security),
            ("performance", &self.performance),
            ("coverage", &self.coverage),
        ]
        .into_iter()
        .filter_map(|(what, c)| c.as_ref().map(|c| (what.to_string(), c.clone())))
        .collect()
    }
}

/// Hook mode (Claude Code's hooks drive the run inside one session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HookConfig {
    /// How long after `agentloop hook start` a run waits to be claimed by the next
    /// session that starts or stops; later, only a session that started it (from
    /// inside, `/agentloop:start`) drives it.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub claim_window: Duration,
    /// Agent teams: check a teammate's task when it marks it completed (the
    /// TaskCompleted hook) and refuse the completion while its checks fail. Off, the
    /// teammate's word is only its own: the task is verified when the lead's session
    /// stops, as any other.
    pub task_gate: bool,
    /// What the agent CLI gives one of agentloop's hooks before it ends it: 10
    /// minutes, as the plugin and `agentloop hook install` set it. A Stop hook's
    /// reviewer still reading a little before then is ended and its turn counted as
    /// a rejection that says so, rather than the CLI ending the whole hook with
    /// nothing recorded. Lower it when your CLI's hook timeout is lower.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub time_limit: Duration,
}

impl Default for HookConfig {
    fn default() -> Self {
        HookConfig {
            claim_window: Duration::from_secs(10 * 60),
            task_gate: true,
            time_limit: Duration::from_secs(10 * 60),
        }
    }
}

impl HookConfig {
    /// When a hook that began at `began` must have its answer ready: the time limit
    /// less a fifth of it, at most 30 s (recording and answering take that).
    pub fn deadline(&self, began: std::time::Instant) -> std::time::Instant {
        let margin = (self.time_limit / 5).min(Duration::from_secs(30));
        began + self.time_limit.saturating_sub(margin)
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            agent: "claude".into(),
            mode: Mode::Quick,
            fallback_agent: None,
            completion_promise: "COMPLETE".into(),
            workers: None,
            branch: "agentloop/{run}".into(),
            isolate: false,
            keep_worktrees: false,
            land: agentloop_ground::values::Land::None,
            shape: ShapeSetting::Auto,
            confirm: true,
            workflow: WorkflowSetting::Auto,
            planners: 0,
            planner_agent: None,
            cycle: None,
            judge: None,
        }
    }
}

impl RunConfig {
    /// Agents at work at once: `workers`, else 4 in swarm mode, else 1.
    pub fn workers(&self) -> u32 {
        self.workers
            .unwrap_or(if self.mode == Mode::Swarm { 4 } else { 1 })
    }
}
impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            commands: Vec::new(),
            timeout: Duration::from_secs(600),
            output_cap: 256 * 1024,
            test_patterns: [
                "tests/",
                "test/",
                "spec/",
                "__tests__/",
                "_test.",
                ".test.",
                "test_",
                ".spec.",
            ]
            .map(String::from)
            .to_vec(),
            protected: vec!["agentloop.toml".into(), ".agentloop/".into()],
            on_protected_change: agentloop_ground::values::OnProtectedChange::Gate,
            check_files: Vec::new(),
            clean_copy: true,
            carry: Vec::new(),
            validate: true,
            validate_fixes: 2,
            regression: agentloop_ground::values::Regression::PerTest,
            flaky: Vec::new(),
            holdout: None,
            jobs: None,
            max_file_size: 100 << 20,
        }
    }
}
