//! The control API behind `agentloop serve`: every run on the machine (from the
//! registry), one run's state, its iterations, control requests appended to its
//! journal like any other, and a live event stream (SSE) that resumes with
//! `Last-Event-ID`. Loopback by default; every request needs the token.

mod auth;
mod control;
mod dashboard;
mod error;
mod events;
mod iterations;
mod peer;
mod runs;
mod start;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentloop_workspace::{RunDir, registered_runs};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use control::control;
pub use error::ApiError;
use events::{all_events, events};
use iterations::{iteration, iterations, output};
use runs::{list_runs, plan_versions, run_state};

/// The largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Clone)]
pub struct Server {
    token: Arc<String>,
    /// Extra runs to serve besides the registry: the current project's, and runs this
    /// server started.
    runs: Arc<Mutex<Vec<RunDir>>>,
    /// How to start runs (`POST /api/runs`), when this server can.
    starter: Option<Arc<start::Starter>>,
}

impl Server {
    pub fn new(token: String, extra_runs: Vec<RunDir>) -> Server {
        Server {
            token: Arc::new(token),
            runs: Arc::new(Mutex::new(extra_runs)),
            starter: None,
        }
    }

    /// Lets clients start runs: `exe` is the agentloop binary run as
    /// `exe run PLAN --run-id ID` in a registered repository; `repos` are repositories
    /// besides those of registered runs (the project `serve` was started in).
    pub fn with_starter(mut self, exe: PathBuf, repos: Vec<PathBuf>) -> Server {
        self.starter = Some(Arc::new(start::Starter::new(exe, repos)));
        self
    }

    fn all_runs(&self) -> Vec<RunDir> {
        let mut runs = registered_runs();
        let extra = self.runs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for r in extra.iter() {
            if !runs.iter().any(|x| x.id == r.id) {
                runs.push(r.clone());
            }
        }
        runs
    }

    fn find(&self, id: &str) -> Result<RunDir, ApiError> {
        let run = self
            .all_runs()
            .into_iter()
            .find(|r| r.id == id)
            .ok_or(ApiError::NotFound(format!("no run {id}")))?;
        if !run.journal().exists() {
            return Err(ApiError::Gone(format!(
                "run {id} is gone: {} was deleted",
                run.path.display()
            )));
        }
        Ok(run)
    }

    pub fn router(self) -> Router {
        let token = axum::middleware::from_fn_with_state(self.clone(), auth::require_token);
        Router::new()
            .route("/api/runs", get(list_runs).post(start::start))
            .route("/api/repos", get(start::repos))
            .route("/api/runs/{id}", get(run_state))
            .route("/api/runs/{id}/plan", get(plan_versions))
            .route("/api/runs/{id}/iterations", get(iterations))
            .route("/api/runs/{id}/iterations/{n}", get(iteration))
            .route("/api/runs/{id}/iterations/{n}/output", get(output))
            .route("/api/runs/{id}/control", post(control))
            .route("/api/runs/{id}/events", get(events))
            .route("/api/events", get(all_events))
            .route_layer(token)
            .merge(dashboard::routes())
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }
}

/// The routes this server answers, as `(method, path)` (the OpenAPI document lists
/// exactly these).
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/runs"),
    ("post", "/api/runs"),
    ("get", "/api/repos"),
    ("get", "/api/runs/{id}"),
    ("get", "/api/runs/{id}/plan"),
    ("get", "/api/runs/{id}/iterations"),
    ("get", "/api/runs/{id}/iterations/{n}"),
    ("get", "/api/runs/{id}/iterations/{n}/output"),
    ("post", "/api/runs/{id}/control"),
    ("get", "/api/runs/{id}/events"),
    ("get", "/api/events"),
];

/// The OpenAPI document, checked in beside this crate's manifest (`docs/openapi.json`
/// links to it).
pub const OPENAPI: &str = include_str!("../openapi.json");
