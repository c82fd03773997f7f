//! One file per command; each reads like a short story of calls into the core.

mod agents;
mod config;
mod control;
mod demo;
mod gc;
mod handoff;
mod hook;
mod init;
mod journal;
mod land;
mod log;
mod mcp;
mod plan;
mod plan_baseline;
mod plan_new;
mod queue;
mod run;
mod run_guards;
mod serve;
mod status;
pub(crate) mod store;
mod surface;
pub(crate) mod watch;

use std::path::{Path, PathBuf};

use agentloop_config::{Layered, Loader, Source, user_config_path};
use agentloop_journal::RunState;
use agentloop_workspace::Workspace;
use serde_json::{Map, Value};

use crate::cli::{
    Cli, Command, ConfigCommand, HookCommand, JournalCommand, PlanCommand, QueueCommand,
    StoreCommand,
};
use crate::error::{CliError, ExitKind};

pub fn dispatch(cli: Cli) -> Result<ExitKind, CliError> {
    // Commands that write a run's journal write it to the store, when one is set.
    if !matches!(
        cli.command,
        Command::Store(_)
            | Command::Init(_)
            | Command::Demo(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::Config(ConfigCommand::Schema)
    ) {
        store::install(&cwd()?)?;
    }
    // A command that drives a run: a store the server refuses (a database it does not
    // have) is a setting to mend, refused before anything is written (exit 2). A store
    // that does not answer is left to the run's own waiting (exit 7).
    if matches!(
        cli.command,
        Command::Run(_) | Command::Resume(_) | Command::Next(_)
    ) && let Some(why) = agentloop_journal::shared::installed().and_then(|s| s.refused())
    {
        return Err(CliError::user(why).hint(
            "a PostgreSQL URL whose database and user the server has: postgres://USER@HOST:PORT/DATABASE",
        ));
    }
    match cli.command {
        Command::Demo(a) => demo::demo(a),
        Command::Init(a) => init::init(&cwd()?, a.full),
        Command::Run(a) => run::run(&cwd()?, a),
        Command::Resume(a) => run::resume(&cwd()?, a),
        Command::Next(a) => run::resume(
            &cwd()?,
            crate::cli::ResumeArgs {
                run: a.run,
                settings: Default::default(),
                headless: false,
                budget: None,
                tokens: None,
                time: None,
                iterations: None,
                force: false,
                out: crate::cli::OutputArgs {
                    json: false,
                    quiet: a.quiet,
                    no_wait: true,
                    step: true,
                    interactive: false,
                },
            },
        ),
        Command::Status(a) => status::status(&workspace()?, a.run.get(), a.json),
        Command::Gc(a) => gc::gc(&workspace()?, a.dry_run),
        Command::Land(a) => land::land(&workspace()?, a.run.get(), a.dry_run, a.merge),
        Command::Handoff(a) => handoff::handoff(&workspace()?, a.run.get(), a.to_issues, a.dry_run),
        Command::VerifySurface(a) => {
            surface::verify_surface(&workspace()?, a.run.get(), a.json, a.accept)
        }
        Command::Runs(a) => status::runs(&workspace()?, a.json),
        Command::Log(a) => log::log(&workspace()?, a),
        Command::Pause(r) => control::pause(&workspace()?, r.get()),
        Command::Stop(a) => control::stop(&workspace()?, a.run.get(), a.now),
        Command::Approve(a) if a.gate.is_some() => control::approve_gate(
            &workspace()?,
            a.run.get(),
            a.note,
            a.gate.unwrap_or_default(),
        ),
        Command::Approve(a) => control::approve(&workspace()?, a.run.get(), a.note, true),
        Command::Reject(a) => control::approve(&workspace()?, a.run.get(), a.note, false),
        Command::Skip(a) if a.skill => {
            control::skip_skill(&workspace()?, a.run.run.as_deref(), &a.task, a.reason)
        }
        Command::Skip(a) => {
            control::skip_or_retry(&workspace()?, a.run.run.as_deref(), &a.task, Some(a.reason))
        }
        Command::Retry(a) => {
            control::skip_or_retry(&workspace()?, a.run.run.as_deref(), &a.task, None)
        }
        Command::Steer(a) => control::steer(&workspace()?, a.run.run.as_deref(), a.note),
        Command::Agents(a) => agents::agents(&cwd()?, a.json),
        Command::Mcp => mcp::mcp(&cwd()?),
        Command::Serve(a) => serve::serve(&cwd()?, a),
        Command::Watch(a) => watch::watch(&workspace()?, a.run.get()),
        Command::Hook(HookCommand::Start {
            plan,
            mode,
            force,
            yes,
        }) => hook::start(&cwd()?, &plan, mode, force, yes),
        Command::Hook(HookCommand::Install {
            user,
            agent,
            guard,
            team,
            mcp,
        }) => hook::install(&cwd()?, user, guard, team, mcp, agent),
        Command::Hook(HookCommand::Uninstall { user, agent }) => {
            hook::uninstall(&cwd()?, user, agent)
        }
        Command::Hook(HookCommand::Other(args)) => {
            hook::hook(args.first().map(String::as_str).unwrap_or_default())
        }
        Command::Hook(event) => hook::hook(event.event().unwrap_or_default()),
        Command::Plan(PlanCommand::Check {
            plan,
            json,
            baseline,
        }) => plan::check(&cwd()?, &plan, json, baseline),
        Command::Plan(PlanCommand::Import {
            file,
            output,
            force,
            api_url,
        }) => plan::import(&file, &output, force, api_url.as_deref()),
        Command::Plan(PlanCommand::New {
            goal,
            from,
            agent,
            output,
            yes,
            force,
            tasks,
        }) => plan_new::new(
            &cwd()?,
            plan_new::NewArgs {
                goal,
                from,
                output,
                agent,
                tasks,
                yes,
                force,
            },
        ),
        Command::Queue(QueueCommand::Add { plan, after }) => queue::add(&cwd()?, &plan, &after),
        Command::Queue(QueueCommand::List { json }) => queue::list(&cwd()?, json),
        Command::Queue(QueueCommand::Run) => queue::run(&cwd()?),
        Command::Config(ConfigCommand::Show { plan, json }) => config::show(&cwd()?, &plan, json),
        Command::Config(ConfigCommand::Schema) => {
            let schema = agentloop_config::json_schema();
            outln!(
                "{}",
                serde_json::to_string_pretty(&schema).unwrap_or_default()
            );
            Ok(ExitKind::Completed)
        }
        Command::Completions(a) => {
            let mut out = Vec::new();
            crate::reference::completions(a.shell, &mut out);
            outln!("{}", String::from_utf8_lossy(&out).trim_end());
            Ok(ExitKind::Completed)
        }
        Command::Man(a) => {
            let written = crate::reference::write_man_pages(&a.dir).map_err(|e| {
                CliError::user(format!(
                    "cannot write man pages into {}: {e}",
                    a.dir.display()
                ))
            })?;
            outln!(
                "{} man pages written into {}",
                written.len(),
                a.dir.display()
            );
            Ok(ExitKind::Completed)
        }
        Command::Journal(JournalCommand::Verify { run, file: None }) => {
            journal::verify(&workspace()?, run.get())
        }
        Command::Journal(JournalCommand::Verify {
            file: Some(file), ..
        }) => journal::verify_file(&file),
        Command::Store(StoreCommand::Migrate) => store::migrate(&cwd()?),
        Command::Store(StoreCommand::Runs) => store::runs(&cwd()?),
        Command::Store(StoreCommand::Export { run }) => store::export(&cwd()?, &run),
    }
}

fn cwd() -> Result<PathBuf, CliError> {
    std::env::current_dir()
        .map_err(|e| CliError::internal(format!("cannot read the current directory: {e}")))
}

fn workspace() -> Result<Workspace, CliError> {
    Ok(Workspace::find(&cwd()?))
}

/// The effective configuration for a project: user config, `agentloop.toml`, the
/// plan's front matter, then flags.
/// A plan as a run takes it, with the configuration its front matter layers in: a
/// plan with its goal alone is taken only when that configuration has planners
/// (`[run] planners`), which grow it.
pub(crate) fn plan_and_config(
    root: &Path,
    full: &Path,
    shown: &Path,
    flags: Map<String, Value>,
) -> Result<(agentloop_plan::Plan, Layered), CliError> {
    let name = shown.display().to_string();
    let plan = agentloop_plan::Plan::load_growing(full, &name)?.with_shape(root)?;
    let layered = load_config_shaped(root, shown, &plan.settings, &plan.shaped, flags)?;
    if plan.tasks.is_empty() && layered.config.run.planners == 0 {
        return Err(agentloop_plan::Plan::no_tasks(&name).into());
    }
    Ok((plan, layered))
}

pub(crate) fn load_config(
    root: &Path,
    plan_file: &Path,
    front_matter: &Map<String, Value>,
    flags: Map<String, Value>,
) -> Result<Layered, CliError> {
    load_config_shaped(root, plan_file, front_matter, &Map::new(), flags)
}

/// [`load_config`] for a plan that took in a shaping step's settings (`shaped`, which
/// `front_matter` holds too, under the plan's own): each is named where it came from.
pub(crate) fn load_config_shaped(
    root: &Path,
    plan_file: &Path,
    front_matter: &Map<String, Value>,
    shaped: &Map<String, Value>,
    flags: Map<String, Value>,
) -> Result<Layered, CliError> {
    load_config_pinned(
        root,
        plan_file,
        (front_matter, shaped),
        flags,
        Pinned::AsItIs,
    )
}

/// What of `all` is not `shaped`'s: the plan's own front matter (a value the plan
/// sets as the shape does is the shape's).
fn own(all: &Map<String, Value>, shaped: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in all {
        match (v, shaped.get(k)) {
            (Value::Object(a), Some(Value::Object(s))) => {
                let rest = own(a, s);
                if !rest.is_empty() {
                    out.insert(k.clone(), Value::Object(rest));
                }
            }
            (v, Some(s)) if v == s => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// Which `agentloop.toml` a configuration is built from.
enum Pinned {
    /// The file as it is now.
    AsItIs,
    /// A run's baseline version (`None`: the run started without one).
    Baseline(Option<Vec<u8>>),
}

fn load_config_pinned(
    root: &Path,
    plan_file: &Path,
    (front_matter, shaped): (&Map<String, Value>, &Map<String, Value>),
    flags: Map<String, Value>,
    pinned: Pinned,
) -> Result<Layered, CliError> {
    let mut loader = Loader::new();
    if let Some(user) = user_config_path() {
        loader = loader.toml_file(Source::User(user.clone()), &user)?;
    }
    let project = root.join("agentloop.toml");
    loader = match pinned {
        Pinned::AsItIs => loader.toml_file(Source::Project(project.clone()), &project)?,
        Pinned::Baseline(Some(bytes)) => {
            loader.toml_bytes(Source::Project(project.clone()), &project, bytes)?
        }
        Pinned::Baseline(None) => loader,
    };
    if !shaped.is_empty() {
        loader = loader.layer(
            Source::Shape(PathBuf::from(agentloop_plan::SHAPE_FILE)),
            shaped.clone(),
        );
    }
    Ok(loader
        .layer(
            Source::Plan(plan_file.to_path_buf()),
            own(front_matter, shaped),
        )
        .layer(Source::Flag, flags)
        .build()?)
}

/// The configuration a run works with: the files as they are now, the plan's front
/// matter and the flags recorded with the run.
///
/// A run with a baseline keeps the `agentloop.toml` it started with (moved forward
/// only by a person's approval at the surface gate): an agent that edits the file
/// cannot change its budgets, gates or checks.
pub(crate) fn run_config(root: &Path, s: &RunState) -> Result<Layered, CliError> {
    run_config_with(root, s, s.settings.flags.clone())
}

/// [`run_config`] with other command-line flags (`resume`'s own on top of the run's).
pub(crate) fn run_config_with(
    root: &Path,
    s: &RunState,
    flags: Map<String, Value>,
) -> Result<Layered, CliError> {
    let pinned = match &s.baseline {
        None => Pinned::AsItIs,
        Some(base) => Pinned::Baseline(match base.get("agentloop.toml") {
            None => None,
            Some(f) => Some(agentloop_verify::surface::blob(root, &f.blob).map_err(|e| {
                CliError::internal(format!(
                    "cannot read the run's baseline of agentloop.toml: {e}"
                ))
            })?),
        }),
    };
    load_config_pinned(
        root,
        Path::new(&s.plan_file),
        (&s.plan.settings, &s.plan.shaped),
        flags,
        pinned,
    )
}

/// Why `agentloop.toml` as it is now is not what run `s` works with, if it is not.
pub(crate) fn config_drift(root: &Path, s: &RunState) -> Option<String> {
    let base = s.baseline.as_ref()?;
    let now = std::fs::read(root.join("agentloop.toml")).ok();
    let then = base
        .get("agentloop.toml")
        .and_then(|f| agentloop_verify::surface::blob(root, &f.blob).ok());
    (now != then).then(|| {
        "agentloop.toml changed since the run started; the run keeps the version it started with until a person approves the change at the surface gate (`agentloop verify-surface` shows it)".to_string()
    })
}

/// Every agent a task names must be one the configuration knows; the error names the
/// task's line.
pub(crate) fn plan_agents_exist(
    config: &agentloop_config::Config,
    plan: &agentloop_plan::Plan,
    file: &str,
) -> Result<(), CliError> {
    for t in &plan.tasks {
        if let Some(name) = &t.agent
            && let Err(e) = agentloop_agents::resolve(config, name)
        {
            return Err(
                CliError::user(format!("{file}:{}: task {}: {e}", t.line, t.id)).hint(e.hint()),
            );
        }
    }
    Ok(())
}

/// What a command needs of the run it acts on when it names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// A run waiting at a gate (approve, reject).
    Gate,
    /// A run that is not finished (pause, stop, steer, resume, …).
    Unfinished,
}

/// The run a command acts on: the one it names, else the one of this work tree that
/// can take the request. When several could, nothing is guessed: the error lists them.
/// When none could, the newest run (whose state then says why the request fails).
pub(crate) fn pick_run(
    ws: &Workspace,
    named: Option<&str>,
    want: Want,
) -> Result<agentloop_workspace::RunDir, CliError> {
    if named.is_some() {
        return Ok(ws.resolve(named)?);
    }
    let mut candidates = Vec::new();
    for id in ws.run_ids() {
        let run = ws.resolve(Some(&id))?;
        let Ok(loaded) = run.load_cached() else {
            continue;
        };
        let s = &loaded.state;
        let fits = !s.is_finished()
            && match want {
                Want::Gate => s.gate.is_some(),
                Want::Unfinished => true,
            };
        if fits {
            candidates.push((run, s.status));
        }
    }
    match candidates.len() {
        0 => Ok(ws.resolve(None)?),
        1 => Ok(candidates.pop().expect("one candidate").0),
        _ => {
            let list = candidates
                .iter()
                .map(|(r, st)| format!("{} ({})", r.id, st.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            let what = match want {
                Want::Gate => "are waiting at a gate",
                Want::Unfinished => "are not finished",
            };
            Err(CliError::user(format!(
                "{} runs in this work tree {what}: {list}",
                candidates.len()
            ))
            .hint("name the one you mean: `--run ID`"))
        }
    }
}

/// A request id unique enough for one machine: source, pid and time.
pub(crate) fn request_id(source: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{source}-{}-{nanos:x}", std::process::id())
}
