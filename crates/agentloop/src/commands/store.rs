//! `[store] url`: the journal in PostgreSQL. [`install`] makes it the journals' store
//! for a command (from `AGENTLOOP_STORE_URL`, else the user's and the project's
//! configuration); `agentloop store migrate|runs|export`; and [`copy_runs`], which
//! keeps this machine's copies of the store's runs up to date from its notifications
//! (for `serve` and `watch` on a machine that does not drive them).

use std::collections::BTreeMap;
use std::path::Path;

use agentloop_config::{Loader, Source, user_config_path};
use agentloop_journal::Writer;
use agentloop_workspace::Workspace;

use crate::error::{CliError, ExitKind};

/// The environment variable that names the store (and wins over the files).
pub const URL_VARIABLE: &str = "AGENTLOOP_STORE_URL";

/// The store's URL for a project at `root`, if one is set.
pub fn url(root: &Path) -> Result<Option<String>, CliError> {
    Ok(store_at(root)?.map(|s| s.url))
}

/// The store a project's commands use: its URL, where that was set, and
/// `[store] timeout`.
struct StoreSetting {
    url: String,
    from: String,
    timeout: Option<std::time::Duration>,
}

fn store_at(root: &Path) -> Result<Option<StoreSetting>, CliError> {
    let from_env = std::env::var(URL_VARIABLE)
        .ok()
        .filter(|u| !u.trim().is_empty());
    let project = root.join("agentloop.toml");
    let user = user_config_path();
    // Most projects have none: no parse for them.
    let mentions = |p: &Path| std::fs::read_to_string(p).is_ok_and(|t| t.contains("[store]"));
    if !mentions(&project) && !user.as_deref().is_some_and(mentions) {
        return Ok(from_env.map(|url| StoreSetting {
            url,
            from: URL_VARIABLE.to_string(),
            timeout: None,
        }));
    }
    let mut loader = Loader::new();
    if let Some(user) = user {
        loader = loader.toml_file(Source::User(user.clone()), &user)?;
    }
    let config = loader
        .toml_file(Source::Project(project.clone()), &project)?
        .build()?;
    let timeout = config.config.store.timeout;
    if let Some(url) = from_env {
        return Ok(Some(StoreSetting {
            url,
            from: URL_VARIABLE.to_string(),
            timeout,
        }));
    }
    let from = config
        .sources
        .get("store.url")
        .map(|s| format!("{s}: [store] url"))
        .unwrap_or_else(|| "[store] url".into());
    Ok(config
        .config
        .store
        .url
        .filter(|u| !u.trim().is_empty())
        .map(|url| StoreSetting { url, from, timeout }))
}

/// Makes the configured store, if any, the journals' store of this process. A URL
/// that is not one is refused with where it was set and why.
pub fn install(cwd: &Path) -> Result<(), CliError> {
    let root = Workspace::find(cwd).root;
    if let Some(s) = store_at(&root)? {
        agentloop_store::Pg::parse(&s.url).map_err(|e| {
            CliError::user(format!("{}: {}", s.from, e.reason()))
                .hint("a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE (or key=value pairs: host=… dbname=…)")
        })?;
        let store =
            agentloop_store::PgStore::new(&s.url).map_err(|e| CliError::user(e.to_string()))?;
        match s.timeout {
            Some(t) => store.timeout(t),
            None => store,
        }
        .install();
    }
    Ok(())
}

/// The store's URL for `agentloop store …`, with `[store] timeout` in force.
fn required(cwd: &Path) -> Result<String, CliError> {
    let s = store_at(&Workspace::find(cwd).root)?.ok_or_else(|| {
        CliError::user("no store is set").hint(format!(
            "set `[store] url = \"postgres://…\"` in agentloop.toml, or {URL_VARIABLE}"
        ))
    })?;
    if let Some(t) = s.timeout {
        agentloop_store::answer_within_set(t);
    }
    Ok(s.url)
}

fn store_error(e: agentloop_store::StoreError) -> CliError {
    use agentloop_store::StoreError;
    match e {
        StoreError::Connect { .. } | StoreError::Frozen { .. } | StoreError::Query { .. } => {
            CliError {
                kind: ExitKind::Infrastructure,
                message: e.to_string(),
                hint: None,
            }
        }
        _ => CliError::user(e.to_string()),
    }
}

/// `agentloop store migrate`.
pub fn migrate(cwd: &Path) -> Result<ExitKind, CliError> {
    let url = required(cwd)?;
    let (before, now) = agentloop_store::migrate(&url).map_err(store_error)?;
    if before == now {
        outln!("the store's schema is {now}: nothing to do");
    } else {
        outln!("the store's schema: {before} → {now}");
    }
    Ok(ExitKind::Completed)
}

/// `agentloop store runs`.
pub fn runs(cwd: &Path) -> Result<ExitKind, CliError> {
    for run in agentloop_store::runs(&required(cwd)?).map_err(store_error)? {
        outln!("{run}");
    }
    Ok(ExitKind::Completed)
}

/// `agentloop store export RUN`: the run's journal in the file format, on stdout.
pub fn export(cwd: &Path, run: &str) -> Result<ExitKind, CliError> {
    let text = agentloop_store::export(&required(cwd)?, run).map_err(store_error)?;
    outln!("{}", text.trim_end_matches('\n'));
    Ok(ExitKind::Completed)
}

/// Keeps this workspace's copies of the store's runs up to date, on a thread of its
/// own, as the store notifies that they grow. Nothing when no store is set.
pub fn copy_runs(ws: &Workspace) -> Result<(), CliError> {
    let Some(url) = url(&ws.root)? else {
        return Ok(());
    };
    // What the store has now, before the command looks; then what it notifies.
    let mut writers: BTreeMap<String, Writer> = BTreeMap::new();
    // A store that is down or does not answer leaves this machine's copies to show,
    // said once; they catch up when it answers again.
    match agentloop_store::runs(&url) {
        Ok(runs) => {
            for run in runs {
                copy_run(ws, &mut writers, &run);
            }
        }
        Err(e) => crate::render::warn(&format!(
            "{}; showing this machine's copies of its runs, brought up to date once it answers",
            store_error(e).message
        )),
    }
    let ws = ws.clone();
    std::thread::Builder::new()
        .name("store-copies".into())
        .spawn(move || {
            // Following ends when the store cannot be reached: try again, for as long
            // as the command lives.
            loop {
                let _ = agentloop_store::follow_runs(&url, |run| {
                    copy_run(&ws, &mut writers, run);
                    true
                });
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
        })?;
    Ok(())
}

fn copy_run(ws: &Workspace, writers: &mut BTreeMap<String, Writer>, id: &str) {
    if !writers.contains_key(id) {
        let Ok(run) = ws.copy_of_shared(id) else {
            return;
        };
        let Ok(w) = Writer::open(&run.journal(), 0, 1) else {
            return;
        };
        writers.insert(id.to_string(), w);
    }
    if let Some(w) = writers.get_mut(id)
        && w.catch_up().is_err()
    {
        writers.remove(id);
    }
}
