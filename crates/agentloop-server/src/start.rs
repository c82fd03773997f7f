//! Starting a run from a client: `POST /api/runs` runs `agentloop run PLAN --run-id ID`
//! in a repository this machine already knows (one with a registered run, or the one
//! `serve` was started in), detached from the server so it outlives it.

use std::collections::HashMap;
use std::path::{Component, Path as FsPath, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentloop_journal as journal;
use agentloop_journal::Event;
use agentloop_workspace::{RunDir, Workspace, new_run_id, registered_runs};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Server;
use crate::error::{ApiError, json_body};

/// How long a start waits for the new run's journal before answering.
const START_WAIT: Duration = Duration::from_secs(20);

pub(crate) struct Starter {
    exe: PathBuf,
    repos: Vec<PathBuf>,
    /// Request id → run id, so the same start twice is one run.
    started: Mutex<HashMap<String, String>>,
}

impl Starter {
    pub(crate) fn new(exe: PathBuf, repos: Vec<PathBuf>) -> Starter {
        Starter {
            exe,
            repos,
            started: Mutex::new(HashMap::new()),
        }
    }
}

impl Starter {
    /// Drives `run` again (`agentloop resume ID`), detached like a start, when its
    /// driver is gone: a Resume from the dashboard does what `agentloop resume` does.
    pub(crate) fn resume(&self, run: &RunDir, workdir: &FsPath) -> Result<(), ApiError> {
        let (log, log_path) = driver_log(&format!("{}.resume.log", run.id))?;
        let mut cmd = Command::new(&self.exe);
        cmd.args(["resume", &run.id, "--quiet"])
            .current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .spawn()
            .map_err(|e| ApiError::Internal(format!("cannot start {}: {e}", self.exe.display())))?;
        // The driver holds the run's lock once it runs; a resume that fails says why.
        let deadline = Instant::now() + START_WAIT;
        while run.lock_holder().is_none() {
            if let Ok(Some(status)) = child.try_wait() {
                let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                if status.success() {
                    return Ok(());
                }
                let first = text
                    .lines()
                    .find(|l| l.starts_with("error"))
                    .unwrap_or("no output");
                return Err(ApiError::Conflict(format!(
                    "the run was not resumed: {first}"
                )));
            }
            if Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        std::thread::spawn(move || child.wait());
        Ok(())
    }
}

/// A driver's own output goes to a log beside the registry: nothing lands in the
/// repository, and the server may go away without the driver losing its stderr.
fn driver_log(name: &str) -> Result<(std::fs::File, PathBuf), ApiError> {
    let path = agentloop_workspace::registry_path()
        .map(|p| p.with_file_name("started").join(name))
        .ok_or_else(|| ApiError::Internal("no state directory".into()))?;
    let file = path
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| std::fs::File::create(&path))
        .map_err(|e| ApiError::Internal(format!("{}: {e}", path.display())))?;
    Ok((file, path))
}

/// Every repository a run may be started in: the workdirs of registered runs (whose
/// directory still exists) and the server's own project.
fn known_repos(s: &Server) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if let Ok(c) = p.canonicalize()
            && c.is_dir()
            && !out.contains(&c)
        {
            out.push(c);
        }
    };
    if let Some(st) = &s.starter {
        st.repos.iter().cloned().for_each(&mut add);
    }
    for run in registered_runs() {
        if let Ok(r) = journal::read_first(&run.journal())
            && let Event::RunCreated { workdir, .. } = r.event
        {
            add(PathBuf::from(workdir));
        }
    }
    out
}

pub(crate) async fn repos(State(s): State<Server>) -> Result<Json<Value>, ApiError> {
    let list = tokio::task::spawn_blocking(move || {
        known_repos(&s)
            .into_iter()
            .map(|p| {
                // Plan files at the top of the repository, to offer in a form.
                let mut plans: Vec<String> = std::fs::read_dir(&p)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".md") && n.to_ascii_lowercase().contains("plan"))
                    .collect();
                plans.sort();
                json!({ "path": p, "plans": plans })
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(json!({ "repos": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartBody {
    request_id: String,
    /// A repository from `GET /api/repos`.
    workdir: String,
    /// The plan, relative to the repository.
    #[serde(default = "default_plan")]
    plan: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    max_iterations: Option<u32>,
}

fn default_plan() -> String {
    "PLAN.md".into()
}

/// A word that can go on a command line as a value: no option look-alikes.
fn plain_word(what: &str, v: &str) -> Result<(), ApiError> {
    let ok = !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('-')
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::Bad(format!("{what} `{v}` is not a valid name")))
    }
}

/// The plan file inside `repo`, refusing anything that leaves it.
fn plan_in(repo: &FsPath, plan: &str) -> Result<PathBuf, ApiError> {
    let rel = FsPath::new(plan);
    if plan.is_empty()
        || rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(ApiError::Bad(format!(
            "plan `{plan}` must be a path inside the repository"
        )));
    }
    let full = repo.join(rel);
    match full.canonicalize() {
        Ok(c) if c.starts_with(repo) && c.is_file() => Ok(rel.to_path_buf()),
        Ok(_) => Err(ApiError::Bad(format!(
            "plan `{plan}` is not a file inside the repository"
        ))),
        Err(_) => Err(ApiError::Bad(format!(
            "no plan `{plan}` in {}",
            repo.display()
        ))),
    }
}

pub(crate) async fn start(
    State(s): State<Server>,
    body: Result<Json<StartBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(b) = json_body(body)?;
    let Some(starter) = s.starter.clone() else {
        return Err(ApiError::Conflict("this server does not start runs".into()));
    };
    if b.request_id.is_empty() || b.request_id.len() > 128 {
        return Err(ApiError::Bad(
            "request_id must be 1 to 128 characters".into(),
        ));
    }
    if let Some(a) = &b.agent {
        plain_word("agent", a)?;
    }
    if let Some(m) = &b.mode {
        plain_word("mode", m)?;
    }
    let server = s.clone();
    tokio::task::spawn_blocking(move || start_blocking(&server, &starter, b))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map(Json)
}

fn start_blocking(s: &Server, starter: &Starter, b: StartBody) -> Result<Value, ApiError> {
    let repo = PathBuf::from(&b.workdir)
        .canonicalize()
        .ok()
        .filter(|r| known_repos(s).contains(r))
        .ok_or_else(|| {
            ApiError::Bad(format!(
                "{} is not a repository this machine has runs in (see GET /api/repos)",
                b.workdir
            ))
        })?;
    let plan = plan_in(&repo, &b.plan)?;
    // Claim the request id before anything starts, so a retry in flight gets the same run.
    let id = {
        let mut started = starter.started.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = started.get(&b.request_id) {
            return Ok(json!({ "run_id": id, "seq": 1, "duplicate": true }));
        }
        let id = new_run_id();
        started.insert(b.request_id.clone(), id.clone());
        id
    };
    let forget = || {
        starter
            .started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&b.request_id);
    };
    let ws = Workspace::find(&repo);
    let run = RunDir {
        path: ws.runs_dir().join(&id),
        id: id.clone(),
    };
    let (log, log_path) = driver_log(&format!("{id}.log"))?;
    let mut cmd = Command::new(&starter.exe);
    cmd.arg("run")
        .arg(&plan)
        .args(["--run-id", &id, "--quiet"])
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    if let Some(a) = &b.agent {
        cmd.args(["--agent", a]);
    }
    if let Some(m) = &b.mode {
        cmd.args(["--mode", m]);
    }
    if let Some(n) = b.max_iterations {
        cmd.args(["--max-iterations", &n.to_string()]);
    }
    // Its own process group: a Ctrl-C at the server's terminal does not reach it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| {
        forget();
        ApiError::Internal(format!("cannot start {}: {e}", starter.exe.display()))
    })?;
    let deadline = Instant::now() + START_WAIT;
    loop {
        if run.journal().exists() {
            s.runs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(run.clone());
            // Reap it whenever it ends, so it never lingers as a zombie.
            std::thread::spawn(move || child.wait());
            return Ok(json!({ "run_id": id, "seq": 1, "duplicate": false, "log": log_path }));
        }
        if let Ok(Some(status)) = child.try_wait() {
            forget();
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let first = text
                .lines()
                .find(|l| l.starts_with("error"))
                .or_else(|| text.lines().next())
                .unwrap_or("no output");
            return Err(ApiError::Bad(format!(
                "the run did not start ({status}): {first}"
            )));
        }
        if Instant::now() > deadline {
            std::thread::spawn(move || child.wait());
            return Err(ApiError::Internal(format!(
                "run {id} has not created its journal after {}s; see {}",
                START_WAIT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}
