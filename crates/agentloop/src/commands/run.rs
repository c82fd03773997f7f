//! `agentloop run` and `agentloop resume`.

use std::collections::BTreeMap;
use std::path::Path;

use agentloop_config::{self as config, Config, Settings};
use agentloop_exec::sandbox::Sandbox;
use agentloop_journal::{Event, Request};
use agentloop_plan::{Mode, Plan};
use agentloop_workspace::Workspace;
use serde_json::{Map, Value, json};

use crate::cli::{OutputArgs, ResumeArgs, RunArgs, SettingsFlags};
use crate::driver::Driver;

pub(crate) use super::run_guards::{
    ceiling, held_out_ready, interactive_needs_a_terminal, iterations_ceiling, judge_confinable,
    one_run_per_tree,
};
use crate::error::{CliError, ExitKind};

pub fn run(cwd: &Path, args: RunArgs) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    let mut flags = args.settings.to_layer()?;
    if args.yes {
        let run = flags.entry("run").or_insert_with(|| json!({}));
        run["confirm"] = json!(false);
    }
    let plan_path = cwd.join(&args.plan);
    start(
        &ws,
        &plan_path,
        flags,
        args.run_id.as_deref(),
        args.force,
        args.out,
    )
}

/// The shape of work the run takes and its kind of work (as configured, or from the
/// plan), with the gates they imply. A plan not clear enough to run unasked (shape
/// intent) waits at plan approval; one told to proceed without confirmation is warned.
pub(crate) fn decide(plan: &Plan, config: &Config, settings: &mut Settings) {
    let clarity = settings.decide_from_plan(plan, config.run.shape, config.run.workflow);
    if settings.shape.as_deref() == Some("intent") && !settings.confirm {
        crate::render::warn(&format!(
            "the plan is not clear enough to run unasked (clarity {}), and it runs without confirmation; its open questions:\n  - {}",
            clarity.describe(),
            clarity.questions().join("\n  - ")
        ));
    }
}

/// The skills `[prompt.require_skills]` names, each found where it is installed.
pub(crate) fn required_skills(
    config: &Config,
    root: &Path,
) -> Result<std::collections::BTreeMap<String, Vec<agentloop_config::Skill>>, CliError> {
    config.prompt.require_skills.find(root).map_err(|e| {
        CliError::user(e).hint("install it (a SKILL.md in .claude/skills/NAME/), or take it out of [prompt.require_skills]")
    })
}

/// The project's own required skills tell every iteration of their phase what to do:
/// they are on the verification surface (a change to one, or its removal, is a change
/// to the checks), as the checks' own files are.
pub(crate) fn guard_skills(settings: &mut Settings) {
    let dirs: Vec<String> = settings
        .skills
        .values()
        .flatten()
        .filter_map(|s| s.file.strip_suffix("SKILL.md"))
        .filter(|d| d.starts_with(".claude/skills/"))
        .map(String::from)
        .collect();
    for d in dirs {
        if !settings.check_files.contains(&d) {
            settings.check_files.push(d);
        }
    }
}

impl SettingsFlags {
    /// The flags as a configuration layer, in the shape of `agentloop.toml`.
    pub(crate) fn to_layer(&self) -> Result<Map<String, Value>, CliError> {
        let mut layer = Map::new();
        let mut set = |table: &str, key: &str, value: Value| {
            let t = layer
                .entry(table.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(t) = t {
                t.insert(key.to_string(), value);
            }
        };
        if let Some(a) = &self.agent {
            set("run", "agent", json!(a));
        }
        if let Some(a) = &self.fallback_agent {
            set("run", "fallback_agent", json!(a));
        }
        if let Some(m) = &self.mode {
            let mode: Mode = m
                .parse()
                .map_err(|e: String| CliError::user(format!("--mode: {e}")))?;
            set("run", "mode", json!(mode));
        }
        if let Some(n) = self.workers {
            set("run", "workers", json!(n));
        }
        if self.isolate {
            set("run", "isolate", json!(true));
        }
        if let Some(n) = self.max_iterations {
            set("budgets", "max_iterations", json!(n));
        }
        if let Some(m) = &self.sandbox {
            set("sandbox", "mode", json!(m));
        }
        if let Some(c) = self.max_cost {
            set("budgets", "max_cost_usd", json!(c));
        }
        if let Some(d) = &self.max_duration {
            set("budgets", "max_duration", json!(d));
        }
        Ok(layer)
    }
}

/// Creates a run for the plan and drives it.
pub(crate) fn start(
    ws: &Workspace,
    plan_path: &Path,
    flags: Map<String, Value>,
    run_id: Option<&str>,
    force: bool,
    out: OutputArgs,
) -> Result<ExitKind, CliError> {
    if let Some(id) = run_id
        && !agentloop_workspace::valid_run_id(id)
    {
        return Err(CliError::user(format!(
            "--run-id {id}: use 1 to 64 letters, digits, '-', '_' or '.'"
        )));
    }
    let shown = plan_path
        .strip_prefix(&ws.root)
        .unwrap_or(plan_path)
        .to_path_buf();
    // A plan may start with its goal alone when planners grow it.
    let (plan, layered) = super::plan_and_config(&ws.root, plan_path, &shown, flags.clone())?;
    interactive_needs_a_terminal(&out)?;
    one_run_per_tree(ws)?;
    ceiling(layered.config.budgets.max_cost_usd, force)?;
    iterations_ceiling(
        layered.config.budgets.max_iterations,
        plan.tasks.len(),
        force,
    )?;
    if layered.config.sandbox.on() {
        layered.config.sandbox.check().map_err(|e| {
            CliError::user(format!("[sandbox] mode = \"workspace\": {e}"))
                .hint("or run without it: --sandbox off")
        })?;
    }
    judge_confinable(&layered.config.sandbox)?;
    super::plan_agents_exist(&layered.config, &plan, &shown.display().to_string())?;
    let versions = check_agents(&layered, &plan)?;
    if layered.config.ship.enabled() {
        crate::driver::preflight(&ws.root, &layered.config.ship).map_err(|e| {
            CliError::user(format!("[ship]: {e}"))
                .hint("the run would do its work and then fail to ship it; fix this first")
        })?;
        // Each task's branch is built with `git merge-tree --merge-base` (git 2.40).
        if layered.config.ship.pr == agentloop_config::PrScope::Task
            && let Some((major, minor)) = agentloop_exec::git::version()
            && (major, minor) < (2, 40)
        {
            return Err(CliError::user(format!(
                "[ship] pr = \"task\" needs git 2.40 or newer (each pull request's branch is built with `git merge-tree --merge-base`); this git is {major}.{minor}"
            ))
            .hint("install git 2.40 or newer (Debian 12 ships 2.39; Debian 13 and Ubuntu 24.04 have newer ones), or ship the run as one pull request: [ship] pr = \"run\""));
        }
    }
    if !agentloop_exec::git::is_repo(&ws.root) {
        crate::render::warn(
            "not a git repository: no task's work is committed (no history to go back to), and workers, \
             `land` and [ship] need one (run `git init`)",
        );
    }
    crate::driver::check_executor(&layered.config, &ws.root).map_err(CliError::user)?;
    held_out_ready(&layered.config, &plan, &ws.root)?;
    let mut settings = Settings::new(&layered.config, flags);
    settings.find_context(&ws.root);
    settings.skills = required_skills(&layered.config, &ws.root)?;
    guard_skills(&mut settings);
    // Every agent's own hosts: a confined reviewer reaches its model API (and a
    // sandbox turned on later reads them here).
    settings.agent_hosts = crate::driver::agent_hosts(&layered.config);
    decide(&plan, &layered.config, &mut settings);
    let (run, writer, state) = ws.create_run_with_id(run_id, &shown, &plan, settings.clone())?;
    if out.json {
        // The stream starts where the journal does: the plan and settings first, then
        // the baseline of the verification surface.
        for r in agentloop_journal::read(&run.journal())?.records {
            crate::render::json_event(&r);
        }
    }
    let lock = run.lock_driver()?;
    let driver = Driver::new(ws.clone(), run, writer, state, layered.config, out, lock)?;
    driver.start(settings, versions)
}

/// Every agent the run may use (the run's, its fallback, each task's, the reviewers,
/// the planners' and the cycles' judge) must exist and be installed before the run
/// starts; returns the version each CLI reported, for the journal. A name from the
/// configuration is named in the error with its key and the file it came from.
fn check_agents(
    layered: &agentloop_config::Layered,
    plan: &Plan,
) -> Result<BTreeMap<String, String>, CliError> {
    let config = &layered.config;
    let mut names: Vec<(&str, Option<&str>)> = vec![(config.run.agent.as_str(), None)];
    let keyed = [
        ("run.fallback_agent", config.run.fallback_agent.as_deref()),
        ("review.agent", config.review.agent.as_deref()),
        ("review.second", config.review.second.as_deref()),
        ("run.planner_agent", config.run.planner_agent.as_deref()),
        ("run.judge", config.run.judge.as_deref()),
    ];
    for (key, name) in keyed {
        names.extend(name.map(|n| (n, Some(key))));
    }
    names.extend(
        plan.tasks
            .iter()
            .filter_map(|t| t.agent.as_deref().map(|n| (n, None))),
    );
    let mut seen = std::collections::BTreeSet::new();
    let mut versions = BTreeMap::new();
    for (name, key) in names {
        if !seen.insert(name) {
            continue;
        }
        let at = |e: String| match key {
            Some(key) => {
                let origin = layered
                    .sources
                    .get(key)
                    .map_or_else(|| "configuration".to_string(), |s| s.to_string());
                let (table, leaf) = key.split_once('.').unwrap_or(("", key));
                format!("{origin}: [{table}] {leaf} = \"{name}\": {e}")
            }
            None => e,
        };
        agentloop_agents::resolve(config, name)
            .map_err(|e| CliError::user(at(e.to_string())).hint(e.hint()))?;
        let probe = match agentloop_agents::probe::probe(config, name) {
            Ok(probe) => probe,
            // Installed and slow to say its version: the run goes on without it.
            Err(e @ agentloop_agents::probe::ProbeError::Slow { .. }) => {
                crate::render::warn(&format!("{e}: going on without its version"));
                continue;
            }
            Err(e) => return Err(CliError::user(at(e.to_string())).hint(e.hint())),
        };
        if let Some(v) = probe.version {
            if let Some(tested) = agentloop_agents::probe::newer_than_tested(&probe.kind, &v) {
                crate::render::warn(&format!(
                    "agent \"{name}\": {v} is newer than the newest version agentloop was tested with ({tested})"
                ));
            }
            versions.insert(name.to_string(), v);
        }
    }
    Ok(versions)
}

/// The most tokens one top-up adds.
const MOST_TOKENS: f64 = 1e12;
/// The most cents one top-up adds: a million dollars.
const MOST_CENTS: f64 = 1e8;

/// `--budget +10`, `--tokens +2M`, `--time +1h`, `--iterations +20` as a top-up; `None`
/// when none is given.
fn top_up(args: &ResumeArgs) -> Result<Option<Request>, CliError> {
    let plus = |flag: &str, v: &str| -> Result<String, CliError> {
        let v = v.trim();
        let v = v.strip_prefix('+').unwrap_or(v);
        if v.is_empty() || v.starts_with('-') {
            return Err(
                CliError::user(format!("--{flag}: `{v}` is not an amount to add"))
                    .hint(format!("e.g. --{flag} +10")),
            );
        }
        Ok(v.to_string())
    };
    let bad =
        |flag: &str, v: &str| CliError::user(format!("--{flag}: `{v}` is not an amount to add"));
    let cost_cents = match &args.budget {
        Some(v) => {
            let v = plus("budget", v)?;
            let usd: f64 = v
                .trim_start_matches('$')
                .parse()
                .map_err(|_| bad("budget", &v))?;
            // A cent is the budget's unit: `+0.001` would add nothing.
            let cents = (usd * 100.0).round();
            if !(cents.is_finite() && (1.0..=MOST_CENTS).contains(&cents)) {
                return Err(
                    bad("budget", &v).hint("from $0.01 to $1,000,000 at a time, e.g. --budget +10")
                );
            }
            Some(cents as u64)
        }
        None => None,
    };
    let tokens = match &args.tokens {
        Some(v) => {
            let v = plus("tokens", v)?;
            let (n, mult) = match v.chars().last() {
                Some('k' | 'K') => (&v[..v.len() - 1], 1_000.0),
                Some('m' | 'M') => (&v[..v.len() - 1], 1_000_000.0),
                _ => (v.as_str(), 1.0),
            };
            let n: f64 = n.parse().map_err(|_| bad("tokens", &v))?;
            let total = (n * mult).round();
            // `+inf` and the like: no budget is that large.
            if !total.is_finite() || !(1.0..=MOST_TOKENS).contains(&total) {
                return Err(bad("tokens", &v).hint("from 1 token to a trillion at a time"));
            }
            Some(total as u64)
        }
        None => None,
    };
    let seconds = match &args.time {
        Some(v) => {
            let v = plus("time", v)?;
            let secs = humantime::parse_duration(&v)
                .map_err(|_| bad("time", &v))?
                .as_secs();
            // Nothing to add is not a top-up; a year at once is a typo.
            if secs == 0 || secs > 366 * 24 * 3600 {
                return Err(bad("time", &v).hint("from 1s to a year at a time, e.g. --time +2h"));
            }
            Some(secs)
        }
        None => None,
    };
    let iterations = match &args.iterations {
        Some(v) => {
            let v = plus("iterations", v)?;
            Some(
                v.parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("iterations", &v))?,
            )
        }
        None => None,
    };
    if cost_cents.is_none() && tokens.is_none() && seconds.is_none() && iterations.is_none() {
        return Ok(None);
    }
    Ok(Some(Request::TopUp {
        cost_cents,
        tokens,
        seconds,
        iterations,
    }))
}

/// A top-up may not lift the run past the ceilings a run may start with (unless
/// `--force`).
fn ceilings_allow(
    state: &agentloop_journal::RunState,
    request: &Request,
    force: bool,
) -> Result<(), CliError> {
    let Request::TopUp {
        cost_cents,
        iterations,
        ..
    } = request
    else {
        return Ok(());
    };
    if let Some(c) = cost_cents {
        let now = state.settings.budgets.max_cost_usd.unwrap_or(0.0) + state.top_up.cost_usd;
        ceiling(Some(now + *c as f64 / 100.0), force)?;
    }
    if let Some(n) = iterations {
        let now = state.settings.budgets.max_iterations + state.top_up.iterations;
        iterations_ceiling(now.saturating_add(*n), state.plan.tasks.len(), force)?;
    }
    Ok(())
}

pub fn resume(cwd: &Path, args: ResumeArgs) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    interactive_needs_a_terminal(&args.out)?;
    let run = super::pick_run(&ws, args.run.get(), super::Want::Unfinished)?;
    let mut loaded = run.load()?;
    // Nothing is recorded before the resume is sure to happen: a refused one (a
    // completed run, another driver, a ceiling) and one that loses the driver lock to
    // a `resume` at the same moment leave the journal as it was.
    let top = top_up(&args)?;
    if let Some(request) = &top {
        ceilings_allow(&loaded.state, request, args.force)?;
    }
    if loaded.state.status == agentloop_journal::RunStatus::Completed {
        return Err(CliError::user(format!(
            "run {} is completed; there is nothing to resume",
            run.id
        ))
        .hint("start a new run with `agentloop run`"));
    }
    if let Some(request) = &top
        && let Some(why) = run.refused_here(&loaded.state)
    {
        // Journaled as an attempt, and refused.
        run.append_control(loaded, super::request_id("cli"), "cli", request.clone())?;
        return Err(CliError::user(why));
    }
    if loaded.state.settings.hook && !args.headless {
        if let Some(request) = top {
            // The session's Stop hook drives it: the top-up waits for its next stop.
            let what = crate::describe::request(&request);
            run.append_control(loaded, super::request_id("cli"), "cli", request)?;
            eprintln!("agentloop: {what}; the run goes on in its Claude Code session");
            return Ok(ExitKind::Completed);
        }
        return Err(CliError::user(format!(
            "run {} is a hook-mode run: it goes on in its Claude Code session",
            run.id
        ))
        .hint(
            "send any message in that session (its Stop hook picks the run up), or `agentloop resume --headless` to drive it with the configured agent instead",
        ));
    }
    if let Some(pid) = run.lock_holder() {
        // Its driver reads what is appended: a top-up reaches it, and a paused run is
        // asked to go on.
        if let Some(request) = top {
            let what = crate::describe::request(&request);
            run.append_control(loaded, super::request_id("cli"), "cli", request)?;
            eprintln!("agentloop: {what}");
            loaded = run.load()?;
        } else if !loaded.state.paused {
            return Err(CliError::from(
                agentloop_workspace::WorkspaceError::Locked {
                    run: run.id.clone(),
                    pid,
                },
            ));
        }
        if loaded.state.paused {
            let (rec, _) =
                run.append_control(loaded, super::request_id("cli"), "cli", Request::Resume)?;
            eprintln!(
                "agentloop: resume requested (event {}); driver pid {pid} continues",
                rec.seq
            );
        } else {
            eprintln!("agentloop: driver pid {pid} continues");
        }
        return Ok(ExitKind::Completed);
    }
    let lock = run.lock_driver()?;
    if let Some(pid) = &lock.took_over {
        crate::render::warn(&format!(
            "the previous driver of run {} (pid {pid}) is gone; taking over",
            run.id
        ));
    }
    // A git of the old driver's killed while it wrote the project's index left it
    // locked (a person's lock stays).
    match agentloop_exec::index_mark::clear(&ws.root) {
        Ok(Some(lock)) => crate::render::warn(&format!(
            "removed {} a killed git of agentloop's left",
            lock.display()
        )),
        Ok(None) => {}
        Err(e) => crate::render::warn(&e),
    }
    // What a driver that held the lock until now wrote is read again.
    loaded = run.load()?;
    if loaded.state.status == agentloop_journal::RunStatus::Completed {
        return Err(CliError::user(format!(
            "run {} was completed meanwhile; there is nothing to resume",
            run.id
        )));
    }
    // The agent of an iteration the old driver never finished died with it; what it
    // started may not have: end it before anything runs again in this tree.
    for open in loaded.state.running.iter().filter(|o| o.agent.is_none()) {
        let pid_file = run.iteration_dir(open.started.iteration).join("agent.pid");
        if let Some(pgid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            let workdir = open
                .started
                .worktree
                .as_ref()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| ws.root.clone());
            let ended = agentloop_exec::reap::end_group_left_behind(pgid, &workdir);
            if ended > 0 {
                crate::render::warn(&format!(
                    "ended {} left behind by the interrupted iteration {}",
                    agentloop_ground::words::plural(ended, "process", "processes"),
                    open.started.iteration
                ));
            }
        }
    }
    // A sandbox whose driver died while bubblewrap started lives on with no parent.
    let sandboxes = agentloop_exec::reap::end_sandboxes_naming(&run.path);
    if sandboxes > 0 {
        crate::render::warn(&format!(
            "ended {} an earlier driver of this run left behind",
            agentloop_ground::words::plural(sandboxes, "sandbox", "sandboxes")
        ));
    }
    // The run's own flags, with the ones given now on top.
    let mut flags = Value::Object(loaded.state.settings.flags.clone());
    config::merge(&mut flags, &Value::Object(args.settings.to_layer()?));
    let Value::Object(flags) = flags else {
        unreachable!("merging two tables gives a table")
    };
    if let Some(why) = super::config_drift(&ws.root, &loaded.state) {
        crate::render::warn(&why);
    }
    let layered = super::run_config_with(&ws.root, &loaded.state, flags.clone())?;
    let versions = check_agents(&layered, &loaded.state.plan)?;
    judge_confinable(&layered.config.sandbox)?;
    crate::driver::check_executor(&layered.config, &ws.root).map_err(CliError::user)?;
    let mut settings = Settings::new(&layered.config, flags);
    settings.find_context(&ws.root);
    settings.skills = required_skills(&layered.config, &ws.root)?;
    guard_skills(&mut settings);
    settings.keep_run_decisions(&loaded.state.settings);
    // The agents' own hosts stay as the run recorded them (a sandbox turned on only
    // now reads them now).
    settings.agent_hosts = loaded.state.settings.agent_hosts.clone();
    if settings.agent_hosts.is_empty() {
        settings.agent_hosts = crate::driver::agent_hosts(&layered.config);
    }
    if let Some(request) = top {
        // Every check passed and the lock is this process's: the top-up is recorded
        // once, by the resume that drives the run.
        let what = crate::describe::request(&request);
        run.append_control_holding(&lock, loaded, super::request_id("cli"), "cli", request)?;
        eprintln!("agentloop: {what}");
        loaded = run.load()?;
    }
    let mut writer = loaded.writer(&run)?;
    let mut state = loaded.state;
    if state.paused || state.is_finished() {
        for r in writer.append(&Event::Control {
            id: super::request_id("cli"),
            source: "cli".into(),
            request: Request::Resume,
            by: None,
        })? {
            state.apply(&r);
        }
    }
    let driver = Driver::new(ws, run, writer, state, layered.config, args.out, lock)?;
    driver.start(settings, versions)
}
