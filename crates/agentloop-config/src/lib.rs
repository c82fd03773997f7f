//! Configuration: what `agentloop.toml` may say (`schema`), how the layers combine and
//! where each value came from (`layers`), the file `init` writes (`template`), and the
//! settings a run freezes into its journal (`settings`).

mod agent;
mod bounds;
mod cycle;
mod decisions;
mod executor;
mod layers;
mod review;
pub mod sandbox;
mod schema;
mod settings;
mod ship;
mod skills;
mod template;

pub use agent::{AgentConfig, AgentKind, BASE_ENV, BUILTIN_AGENTS, PromptVia, env_allowed};
pub use bounds::UNSAID as SCHEMA_UNSAID;
pub use cycle::Cycle;
pub use executor::{
    ExecutorConfig, ExecutorKind, KubernetesConfig, PodSecurity, PullPolicy, SCRATCH_PATH,
    SCRATCH_VOLUME, SPEC_MOUNT, SPEC_VOLUME, SlurmConfig,
};
pub use layers::{ConfigError, Layered, Loader, Source, merge, user_config_path};
pub use review::{ReviewConfig, ReviewWhen};
pub use sandbox::{ConfineChecks, SandboxConfig};
pub use schema::{
    COVERAGE_REPORTS, CheckJobs, Config, GitConfig, HookConfig, Price, RunConfig, ShapeSetting,
    StoreConfig, VerifyConfig, WorkflowSetting,
};
pub use settings::Settings;
pub use ship::{
    AfterMergeFailure, CONTEXT_FILES, Forge, MergeMethod, MergeWhen, PrScope, PromptConfig,
    RUN_ISSUE, Ship, Tracker,
};
pub use skills::{RequireSkills, Skill, prompt_section as skills_section};
pub use template::{SCHEMA_PATH, SHORT_TEMPLATE, TEMPLATE, full_template};

/// The JSON Schema of `agentloop.toml`, from the configuration's own types: what
/// editors (taplo, Even Better TOML) complete and check keys with, and what the
/// configuration reference is written from.
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Config).to_value();
    if let Some(o) = schema.as_object_mut() {
        o.insert("title".into(), "agentloop.toml".into());
        o.insert(
            "description".into(),
            "agentloop's configuration: every key is optional (`agentloop config show` prints each effective value and where it came from).".into(),
        );
    }
    schema
}
