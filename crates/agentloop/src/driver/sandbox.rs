//! `[sandbox] mode = "workspace"` in the driver: each iteration's agent confined (its
//! proxy started with the hosts it may reach), and what the sandbox refused it read
//! back into the journal after it finished, for the views and its next prompt.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_config::env_allowed;
use agentloop_config::{AgentConfig, Config};
use agentloop_exec::sandbox::Sandbox;
use agentloop_exec::sandbox::bytecode::Bytecode;
use agentloop_exec::sandbox::judge;
use agentloop_exec::sandbox::{self, AllowList, Confinement};
use agentloop_journal::Event;

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// The confinement of an iteration's agent: its working directory and its
    /// iteration's directory writable, the rest read-only, secrets hidden, the network
    /// through the proxy; none when the run has no sandbox.
    pub(crate) fn confine(
        &self,
        workdir: &std::path::Path,
        iteration: u32,
        agent: &str,
    ) -> Result<Confinement, CliError> {
        if !self.state.settings.sandbox.on() {
            return Ok(Confinement::default());
        }
        let caches = self.agent_caches();
        let own = self.run.iteration_dir(iteration);
        self.agent_box(workdir, &own, sandbox::Caches::Run(&caches), agent)
    }

    /// The tools' caches of the run's agents (`~/.cache`, `~/.npm` as they see them),
    /// in agentloop's cache; `gc` removes them with the run's worktrees.
    pub(crate) fn agent_caches(&self) -> std::path::PathBuf {
        agent_caches_of(&self.run.id)
    }

    /// The same for an agent that is not an iteration's (a planner, a cycle's judge):
    /// `own` is its directory in the run's (its prompt, its log, the proxy's
    /// refusals). Its caches are fresh: what a worker planted in the run's does not
    /// reach it.
    pub(crate) fn confine_in(
        &self,
        workdir: &std::path::Path,
        own: &std::path::Path,
        agent: &str,
    ) -> Result<Confinement, CliError> {
        if !self.state.settings.sandbox.on() {
            return Ok(Confinement::default());
        }
        self.agent_box(workdir, own, sandbox::Caches::Fresh, agent)
    }

    /// The confinement of an agent that judges (a reviewer): as an agent's under
    /// `[sandbox]`, and also without it wherever the checks are confined (its copy
    /// writable, its model API its only host).
    pub(crate) fn confine_judge(
        &self,
        workdir: &std::path::Path,
        own: &std::path::Path,
        agent: &str,
    ) -> Result<Confinement, CliError> {
        let sandbox = &self.state.settings.sandbox;
        if !sandbox.on() && judge::unconfined(sandbox).is_some() {
            return Ok(Confinement::default());
        }
        self.agent_box(workdir, own, sandbox::Caches::Fresh, agent)
    }

    /// An agent's bubblewrap in `workdir` (`own` its directory in the run's), its
    /// proxy started with the hosts it may reach.
    fn agent_box(
        &self,
        workdir: &std::path::Path,
        own: &std::path::Path,
        caches: sandbox::Caches<'_>,
        agent: &str,
    ) -> Result<Confinement, CliError> {
        self.state
            .settings
            .sandbox
            .confine(
                &self.ws.root,
                workdir,
                own,
                caches,
                self.allowed_hosts(agent),
                sandbox::AgentPaths {
                    programs: &self.agent_programs(agent),
                    homes: &self.agent_homes(agent),
                },
            )
            .map_err(|e| CliError::internal(format!("cannot make the sandbox: {e}")))
    }

    /// The command a check in `dir` runs under: confined by default wherever
    /// bubblewrap works (`exec::sandbox::judge`), its working copy and its reports'
    /// directory writable, no network; unconfined where it cannot be (said once,
    /// [`Driver::say_unconfined`]).
    pub(crate) fn check_wrap(
        &self,
        dir: &std::path::Path,
        reports: &std::path::Path,
    ) -> Vec<std::ffi::OsString> {
        let sandbox = &self.state.settings.sandbox;
        judge::wrap(
            sandbox,
            &self.ws.root,
            dir,
            reports,
            &self.warm_caches(false),
        )
    }

    /// [`Self::check_wrap`] for the baseline's checks, which warm the build caches (Go's,
    /// Jest's) the run's later checks each start from a copy of.
    pub(crate) fn baseline_wrap(
        &self,
        dir: &std::path::Path,
        reports: &std::path::Path,
    ) -> Vec<std::ffi::OsString> {
        let sandbox = &self.state.settings.sandbox;
        judge::wrap(
            sandbox,
            &self.ws.root,
            dir,
            reports,
            &self.warm_caches(true),
        )
    }

    /// The run's build caches' seed, among the judges' copies (out of a sandboxed
    /// agent's reach; `gc` sweeps it with the run's copies).
    fn warm_caches(&self, warms: bool) -> judge::WarmCaches {
        match (self.caches_seed(), warms) {
            (None, _) => judge::WarmCaches::Fresh,
            (Some(seed), true) => judge::WarmCaches::Warms(seed),
            (Some(seed), false) => judge::WarmCaches::From(seed),
        }
    }

    /// Where [`Self::warm_caches`]'s seed is: beside the run's clean copy.
    pub(crate) fn caches_seed(&self) -> Option<std::path::PathBuf> {
        self.beside_copy(".caches")
    }

    /// `suffix` added to the name of the run's clean copy: a place beside it, among
    /// the judges' copies (out of a sandboxed agent's reach; `gc` sweeps it with the
    /// run's copies).
    fn beside_copy(&self, suffix: &str) -> Option<std::path::PathBuf> {
        let copy = agentloop_verify::clean_copy::CleanCopy::for_run(&self.ws.root, &self.run.id)?;
        let mut name = copy.dir.into_os_string();
        name.push(suffix);
        Some(name.into())
    }

    /// Where the run's checks' Python bytecode comes from
    /// (`exec::sandbox::bytecode`): the baseline's checks keep what they compiled in
    /// the run's clean copy (`keeps`), the later checks there have it put back.
    pub(crate) fn bytecode(&self, keeps: bool) -> Bytecode {
        match (self.python_seed(), keeps) {
            (None, _) => Bytecode::Compiled,
            (Some(seed), true) => Bytecode::Keeps(seed),
            (Some(seed), false) => Bytecode::From(seed),
        }
    }

    /// Where [`Self::bytecode`]'s seed is: beside the run's clean copy.
    pub(crate) fn python_seed(&self) -> Option<std::path::PathBuf> {
        self.beside_copy(".python")
    }

    /// The sandbox the checks of a merge or a worker are confined by; none when they
    /// run unconfined.
    pub(crate) fn check_sandbox(&self) -> Option<crate::driver::jobs::CheckBox> {
        let sandbox = &self.state.settings.sandbox;
        judge::unconfined(sandbox)
            .is_none()
            .then(|| crate::driver::jobs::CheckBox {
                sandbox: sandbox.clone(),
                root: self.ws.root.clone(),
                warm: self.warm_caches(false),
            })
    }

    /// Says once, and records, that the run's checks run unconfined, and why: the
    /// verdict cannot be SHIP then (`journal::summary`).
    pub(crate) fn say_unconfined(&mut self) -> Result<(), CliError> {
        let Some(why) = judge::unconfined(&self.state.settings.sandbox) else {
            return Ok(());
        };
        if self.state.unconfined_checks.as_deref() == Some(why.as_str()) {
            return Ok(());
        }
        self.progress.warn(&format!(
            "the checks run unconfined (their code can write outside their copy and reach the network): {why}; the verdict will be MONITOR at best"
        ));
        self.record(Event::ChecksUnconfined { why })
    }

    /// What `agent` may reach: its own hosts as recorded when the run was created,
    /// and `[sandbox] allow_hosts`.
    /// The files an agent's command line names by an absolute path (a command agent's
    /// program, its script): the sandbox shows those under `/tmp` to it.
    fn agent_programs(&self, agent: &str) -> Vec<std::path::PathBuf> {
        (self.config.agents.get(agent).into_iter())
            .flat_map(|a| &a.command)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect()
    }

    /// The agent CLI's own directory where its environment (its `env` table, else
    /// agentloop's) puts it elsewhere than the home directory.
    fn agent_homes(&self, agent: &str) -> Vec<(std::path::PathBuf, &'static str)> {
        let Some(a) = self.config.agents.get(agent) else {
            return Vec::new();
        };
        let (var, stands_for) = match a.kind {
            agentloop_config::AgentKind::Claude => ("CLAUDE_CONFIG_DIR", ".claude"),
            agentloop_config::AgentKind::Codex => ("CODEX_HOME", ".codex"),
            agentloop_config::AgentKind::Copilot => ("COPILOT_HOME", ".copilot"),
            _ => return Vec::new(),
        };
        a.env
            .get(var)
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os(var))
            .filter(|v| !v.is_empty())
            .map(|v| (std::path::PathBuf::from(v), stands_for))
            .into_iter()
            .collect()
    }

    fn allowed_hosts(&self, agent: &str) -> AllowList {
        let settings = &self.state.settings;
        let mut hosts = settings.agent_hosts.get(agent).cloned().unwrap_or_default();
        hosts.extend(settings.sandbox.allow_hosts.iter().cloned());
        hosts.retain(|h| AllowList::parse(std::slice::from_ref(h)).is_ok());
        AllowList::parse(&hosts).unwrap_or_default()
    }

    /// Records what the sandbox refused the agent of `iteration`, one event each.
    pub(crate) fn record_denials(&mut self, iteration: u32) -> Result<(), CliError> {
        let sandbox = &self.state.settings.sandbox;
        if !sandbox.on() {
            return Ok(());
        }
        let hidden = sandbox.unreachable_paths();
        for denial in sandbox::denials_of(&self.run.iteration_dir(iteration), &hidden) {
            self.progress.warn(&format!(
                "iteration {iteration}: the sandbox refused {}",
                denial.describe()
            ));
            self.record(Event::SandboxDenied { iteration, denial })?;
        }
        Ok(())
    }
}

/// Each agent's own hosts — its provider, and the endpoints its environment and its
/// CLI's config file name — for every agent the configuration knows: recorded in the
/// run's settings when it is created (`Settings::agent_hosts`).
pub(crate) fn agent_hosts(config: &Config) -> BTreeMap<String, Vec<String>> {
    let names: BTreeSet<&str> = config
        .agents
        .keys()
        .map(String::as_str)
        .chain(agentloop_config::BUILTIN_AGENTS.iter().copied())
        .collect();
    names
        .into_iter()
        .map(|agent| {
            let config = config
                .agents
                .get(agent)
                .cloned()
                .unwrap_or_else(|| AgentConfig::builtin(agent));
            let passed = config.allowed_env();
            let inherited: Vec<String> = std::env::vars()
                .filter(|(k, _)| env_allowed(k, &passed))
                .map(|(_, v)| v)
                .collect();
            let files = own_config_files(&config);
            let hosts = sandbox::agent_hosts(
                config.kind.as_str(),
                config
                    .env
                    .values()
                    .map(String::as_str)
                    .chain(inherited.iter().map(String::as_str))
                    .chain(files.iter().map(String::as_str)),
            );
            (agent.to_string(), hosts)
        })
        .collect()
}

/// The text of the agent CLI's own configuration files that name its model endpoint:
/// Codex's `config.toml` (its providers' `base_url`), OpenCode's `OPENCODE_CONFIG`,
/// Qwen Code's and Factory Droid's `settings.json`.
fn own_config_files(config: &AgentConfig) -> Vec<String> {
    let var = |name: &str| {
        config
            .env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    };
    let home = var("HOME").unwrap_or_default();
    let paths: Vec<std::path::PathBuf> = match config.kind.as_str() {
        "codex" => vec![
            std::path::Path::new(&var("CODEX_HOME").unwrap_or_else(|| format!("{home}/.codex")))
                .join("config.toml"),
        ],
        "opencode" => var("OPENCODE_CONFIG").into_iter().map(Into::into).collect(),
        // Their model providers' `baseUrl`s.
        "qwen" => vec![std::path::Path::new(&home).join(".qwen/settings.json")],
        "droid" => vec![std::path::Path::new(&home).join(".factory/settings.json")],
        "cline" => vec![std::path::Path::new(&home).join(".cline/data/settings/providers.json")],
        _ => Vec::new(),
    };
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// Where the tools' caches of run `id`'s agents are.
pub(crate) fn agent_caches_of(id: &str) -> std::path::PathBuf {
    agentloop_ground::fsutil::cache_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("agentloop-cache"))
        .join("agent-caches")
        .join(id)
}
