//! Configuration: what `agentloop.toml` may say (`schema`), how the layers combine and
//! where each value came from (`layers`), the file `init` writes (`template`), and the
//! settings a run freezes into its journal (`settings`).

mod decisions;
mod executor;
mod layers;
mod review;
mod schema;
mod settings;
mod ship;
mod template;

pub use executor::{ExecutorConfig, ExecutorKind, KubernetesConfig, SlurmConfig};
pub use layers::{ConfigError, Layered, Loader, Source, merge, user_config_path};
pub use review::{ReviewConfig, ReviewWhen};
pub use schema::{
    AgentConfig, BASE_ENV, BUILTIN_AGENTS, Config, GitConfig, HookConfig, Price, PromptVia,
    RunConfig, ShapeSetting, StoreConfig, VerifyConfig, WorkflowSetting,
};
pub use settings::Settings;
pub use ship::{
    AfterMergeFailure, CONTEXT_FILES, Forge, MergeMethod, MergeWhen, PrScope, PromptConfig, Ship,
    Tracker,
};
pub use template::TEMPLATE;
