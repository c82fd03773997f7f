//! Value types that the configuration, the run's settings and the journal's events
//! all carry: budgets, breakers, gates, limits, notifications and token usage. They sit
//! below both `config` and `journal`, so neither has to import the other.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The cost budget of a run that names none (the seeds' loop skill: $25).
pub const DEFAULT_COST_USD: f64 = 25.0;
/// A cost budget above this needs `--force`.
pub const COST_CEILING_USD: f64 = 100.0;

/// Refuses a cost budget above the ceiling unless forced.
pub fn cost_ceiling(limit: Option<f64>, force: bool) -> Result<(), String> {
    match limit {
        Some(l) if l > COST_CEILING_USD && !force => Err(format!(
            "a cost budget of {} is over the {} ceiling",
            crate::words::money(l),
            crate::words::money(COST_CEILING_USD)
        )),
        _ => Ok(()),
    }
}

/// An iteration budget above this many per task of the plan needs `--force` …
pub const ITERATIONS_PER_TASK_CEILING: u32 = 10;
/// … unless it is at most this: 5,000 iterations for a ten-task plan is a typo or a run
/// with no end, not a budget.
pub const ITERATION_CEILING_MIN: u32 = 500;

/// The most iterations a plan of `tasks` tasks may be given without `--force`.
pub fn iteration_ceiling(tasks: usize) -> u32 {
    let per_task = u32::try_from(tasks)
        .unwrap_or(u32::MAX)
        .saturating_mul(ITERATIONS_PER_TASK_CEILING);
    per_task.max(ITERATION_CEILING_MIN)
}

/// Refuses an iteration budget above the ceiling of a plan of `tasks` unless forced.
pub fn iterations_ceiling(limit: u32, tasks: usize, force: bool) -> Result<(), String> {
    let ceiling = iteration_ceiling(tasks);
    if limit > ceiling && !force {
        return Err(format!(
            "an iteration budget of {limit} is over the ceiling of {ceiling} for {} ({} per task, at least {ITERATION_CEILING_MIN})",
            crate::words::plural(tasks, "task", "tasks"),
            ITERATIONS_PER_TASK_CEILING
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// Iterations for the whole run (default 50; over 10 per task, and over 500, needs
    /// `--force`).
    #[schemars(range(min = 1))]
    pub max_iterations: u32,
    /// Iterations per task before the escalation ladder moves up a rung.
    #[schemars(range(min = 1))]
    pub task_retries: u32,
    /// Dollars the whole run may spend (default 25; over 100 needs `--force`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub max_cost_usd: Option<f64>,
    /// Tokens the whole run may use, input and output together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The run's own wall time while it runs (not waiting for a person, not without a
    /// driver), e.g. "4h": with workers, an hour of eight lanes is an hour.
    #[serde(skip_serializing_if = "Option::is_none", with = "opt_duration")]
    #[schemars(schema_with = "duration::schema")]
    pub max_duration: Option<Duration>,
    /// Accepted replans for the whole run.
    pub max_replans: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_iterations: 50,
            task_retries: 5,
            max_cost_usd: Some(DEFAULT_COST_USD),
            max_tokens: None,
            max_duration: None,
            max_replans: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Breakers {
    /// The same failure fingerprint this many times in a row.
    pub same_failure: u32,
    /// No change in the working tree for this many iterations in a row.
    pub no_change: u32,
    /// The agent exits with no output this many times in a row.
    pub no_output: u32,
    /// The work tree comes back to a state it was already in this many times.
    pub oscillation: u32,
    /// After the same failure this many times in a row, one DEBUG iteration looks for
    /// its cause (hypotheses and how to test them) instead of a fix; 0: never.
    pub debug_after: u32,
    /// One file edited this many times by the agent's tool calls in an iteration that
    /// did not pass (thrashing: from the CLI's tool log, where it reports one); 0: never.
    pub thrashing: u32,
}

impl Default for Breakers {
    fn default() -> Self {
        Breakers {
            same_failure: 3,
            no_change: 3,
            no_output: 2,
            oscillation: 2,
            debug_after: 2,
            thrashing: 5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Gates {
    /// Wait for a person to approve the plan before the first iteration (Gate 1).
    pub plan_approval: bool,
    /// Then wait for a person to accept the plan's review (Gate 2): what agentloop
    /// finds reading the plan — open questions, tasks no check verifies, work that
    /// rests on assumptions, irreversible tasks. Opens only when it finds something.
    pub plan_review: bool,
    /// Wait for a person to approve before the run is declared complete (Gate 3; with
    /// `[ship]`, the pull request's review is the same point).
    pub final_review: bool,
    /// Wait for a person after each task is verified (the colleague shape).
    pub after_each: bool,
    /// Wait for a person before the first iteration of a task of reversibility class 1
    /// (hours to undo: schema changes, public APIs, releases).
    pub before_irreversible: bool,
    /// Diff-triggered gates: what a diff touches holds the pull request of a shipped
    /// run (or, without a forge, each task as it is done) for that gate's review
    /// (`policy::diffgates` says what triggers each).
    pub security: DiffGate,
    pub database: DiffGate,
    pub external: DiffGate,
    pub architecture: DiffGate,
    /// Always before agentloop merges into the base branch.
    pub deploy: DiffGate,
    /// Wait for a person to approve the tasks a planner (`[run] planners`) proposes
    /// before they join the plan.
    pub new_tasks: bool,
}

impl Gates {
    /// A gate that reads the diff is on (deploy reads none).
    pub fn any_diff_gate(&self) -> bool {
        [
            &self.security,
            &self.database,
            &self.external,
            &self.architecture,
        ]
        .iter()
        .any(|g| g.enabled)
    }
}

impl Default for Gates {
    fn default() -> Gates {
        let gate = |paths: &[&str], patterns: &[&str]| DiffGate {
            enabled: false,
            paths: paths.iter().map(|s| s.to_string()).collect(),
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            reviewers: Vec::new(),
        };
        Gates {
            plan_approval: false,
            plan_review: false,
            final_review: false,
            after_each: false,
            before_irreversible: true,
            new_tasks: false,
            // Their built-in rules are the policy's (`policy::diffgates`): what a
            // person sets here is besides them.
            security: gate(&[], &[]),
            database: gate(&[], &[]),
            external: gate(&[], &[]),
            architecture: gate(&[], &[]),
            deploy: gate(&[], &[]),
        }
    }
}

/// One diff-triggered gate: on or off, the paths and the added-line patterns that
/// trigger it (besides its built-in rules), and who may release it with a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DiffGate {
    /// Whether this gate holds a pull request whose diff touches what it guards.
    pub enabled: bool,
    /// A directory (`migrations/`, anywhere in the path), an extension (`*.sql`), or a
    /// fragment of a path component (`auth`).
    pub paths: Vec<String>,
    /// Regular expressions matched against added lines.
    pub patterns: Vec<String>,
    /// An approving review from one of them releases the gate.
    pub reviewers: Vec<String>,
}

/// What to do when the model service says "not now".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wait after a usage or rate limit whose reset time the agent did not tell;
    /// doubled for each limit in a row.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub wait: Duration,
    /// Backoff after an overloaded service (529), doubled for each in a row.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub overloaded_wait: Duration,
    /// The longest single wait; a longer one waits for a person instead.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub max_wait: Duration,
    /// `wait` for the reset, or hand the task to `run.fallback_agent` (`fallback`).
    pub on_limit: OnLimit,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnLimit {
    #[default]
    Wait,
    Fallback,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wait: Duration::from_secs(60),
            overloaded_wait: Duration::from_secs(15),
            max_wait: Duration::from_secs(6 * 3600),
            on_limit: OnLimit::Wait,
        }
    }
}

/// What `[verify] on_protected_change` says to do with a change to the surface.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnProtectedChange {
    /// The task does not complete; a person approves (the baseline moves) or rejects
    /// (the baseline is restored).
    #[default]
    Gate,
    /// agentloop restores the baseline before verifying and tells the agent.
    Restore,
    /// No baseline: only the iteration's own diff is checked against `protected`.
    Allow,
}

/// How the run-wide `[verify] commands` judge a task.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Regression {
    /// A regression check: every test that passed at the run's baseline must still
    /// pass (read from the runner's report); tests failing at the baseline may go on
    /// failing. A command with no report falls back to its exit code.
    #[default]
    PerTest,
    /// The whole command must exit 0.
    ExitCode,
}

/// What a completed run with workers does with the checked-out branch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Land {
    /// The work stays on the integration branch.
    #[default]
    None,
    /// The checked-out branch is fast-forwarded to the integration branch.
    Ff,
}

/// Where to tell a person that a run needs them, hit a limit, tripped a breaker,
/// completed or failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Notify {
    /// `http://` or `https://` URL that gets a JSON POST per notification.
    #[schemars(regex(pattern = "^https?://"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// PEM file of the CA certificates to trust for an `https://` webhook instead of
    /// the public roots (a private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_ca: Option<std::path::PathBuf>,
    /// A program run per notification with the JSON on stdin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// A desktop notification through `notify-send`, where it exists.
    pub desktop: bool,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cached_input_tokens + self.cache_write_tokens + self.output_tokens
    }
    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
        self.output_tokens += o.output_tokens;
    }
}

pub mod duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// What `deserialize` reads, as a JSON Schema pattern: `0`, or numbers (a fraction
    /// too) each with its unit (`90s`, `1h 30m`, `1.5h`). The units are humantime's.
    pub const PATTERN: &str = concat!(
        r"^(0|(\s*[0-9][0-9\s]*(\.\s*[0-9][0-9\s]*)?",
        r"(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s",
        r"|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d",
        r"|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)\s*)+)$"
    );

    /// The schema of a duration the configuration writes (`"90s"`, `"4h"`).
    pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": PATTERN,
        })
    }

    /// The schema of a duration that may not be zero: a digit other than 0 somewhere.
    pub fn nonzero_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "allOf": [{ "pattern": PATTERN }, { "pattern": "[1-9]" }],
        })
    }

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "`{s}` is not a duration like \"90s\" or \"4h\": {e}"
            ))
        })
    }
}

pub mod opt_duration {
    use serde::{Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}
