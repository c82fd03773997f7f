//! The Kubernetes client: a `batch/v1` Job per iteration (`backoffLimit: 0`, so a
//! retry is agentloop's decision; `activeDeadlineSeconds` from the agent's timeout;
//! `ttlSecondsAfterFinished`), the agent's allow-listed environment in a Secret the Job
//! owns (`envFrom`, never in the spec), pods followed by one watch for the whole run
//! (resumed from its last resource version, listed again after `410 Gone`), the pod's
//! log streamed into the iteration's, cancellation by deleting the Job with its pods.
//! The API is reached through kube-rs on a small runtime of its own thread; the rest
//! of agentloop stays synchronous.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentloop_config::{Config, KubernetesConfig};
use agentloop_journal::AgentErrorKind;
use futures::AsyncReadExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

mod events;
mod judge;
mod names;
mod spec;
mod watch;

use super::{Ended, Engine, Submission};
use judge::{Phase, judge};
use names::{job_name, label_value};
use watch::{PodWatch, Runtime, watch_pods};

/// The label every object agentloop makes carries.
pub(crate) const MANAGED: &str = "app.kubernetes.io/managed-by=agentloop";
const CONTAINER: &str = "agent";

/// Kubernetes as the engine of a run's jobs.
pub struct KubernetesEngine {
    rt: Runtime,
    jobs: Api<Job>,
    pods: Api<Pod>,
    secrets: Api<Secret>,
    events: Api<Event>,
    server: String,
    namespace: String,
    settings: KubernetesConfig,
    poll: Duration,
    watch: Arc<PodWatch>,
    /// The watch starts with the first job (not for a check).
    watching: std::sync::Once,
    /// Each job's log file, from its submission.
    logs: Mutex<BTreeMap<String, PathBuf>>,
}

impl KubernetesEngine {
    pub fn new(config: &Config) -> Result<KubernetesEngine, String> {
        let settings = config.executor.kubernetes.clone();
        settings.check()?;
        spec::check(&settings)?;
        let rt = Runtime::start()?;
        let context = settings.context.clone();
        let (client, server, default_ns) = rt.call(async move {
            let config = match context {
                Some(context) => kube::Config::from_kubeconfig(&kube::config::KubeConfigOptions {
                    context: Some(context),
                    ..Default::default()
                })
                .await
                .map_err(|e| e.to_string())?,
                None => kube::Config::infer().await.map_err(|e| e.to_string())?,
            };
            // kube's own retries of a 429, 503 or 504 wait up to 1000 s between
            // tries, out of sight: agentloop asks again itself, within its own limits
            // (`start_timeout`, a creation's three tries).
            let mut config = config;
            config.default_retry = false;
            let server = config.cluster_url.to_string();
            let ns = config.default_namespace.clone();
            let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
            Ok::<_, String>((client, server, ns))
        })?
        .map_err(|e| format!("[executor] kind = \"kubernetes\": no cluster to talk to ({e}); set KUBECONFIG or [executor.kubernetes] context"))?;
        let namespace = settings.namespace.clone().unwrap_or(default_ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let watch = Arc::new(PodWatch::default());
        Ok(KubernetesEngine {
            jobs: Api::namespaced(client.clone(), &namespace),
            secrets: Api::namespaced(client.clone(), &namespace),
            events: Api::namespaced(client, &namespace),
            pods,
            rt,
            server,
            namespace,
            settings,
            poll: config.executor.poll,
            watch,
            watching: std::sync::Once::new(),
            logs: Mutex::new(BTreeMap::new()),
        })
    }

    fn api_error(&self, e: impl std::fmt::Display) -> String {
        format!(
            "the Kubernetes API at {} (namespace {}): {e}",
            self.server, self.namespace
        )
    }

    /// The Job, or `None` when the API says there is none.
    fn get_job(&self, name: &str) -> Result<Option<Job>, String> {
        self.read_job(name).map_err(|t| match t {
            Trouble::Again(e) | Trouble::Refused(e) => e,
        })
    }

    /// The Job, or `None` when the API says there is none; an error says whether
    /// asking again may help.
    fn read_job(&self, name: &str) -> Result<Option<Job>, Trouble> {
        let jobs = self.jobs.clone();
        let name = name.to_string();
        match self.rt.call(async move { jobs.get(&name).await }) {
            Err(e) => Err(Trouble::Again(self.api_error(e))),
            Ok(Ok(j)) => Ok(Some(j)),
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(None),
            // Throttled, or the server's (or a gateway's) own trouble.
            Ok(Err(kube::Error::Api(s))) if s.code == 429 || s.code >= 500 => {
                Err(Trouble::Again(self.api_error(s.message)))
            }
            // Forbidden (a missing `get jobs` permission), unauthorized (an expired
            // token), a request refused: asked again, refused again.
            Ok(Err(kube::Error::Api(s))) => Err(Trouble::Refused(
                self.api_error(format!("{} {}: {}", s.code, s.reason, s.message)),
            )),
            // No answer (a connection refused or cut, a timeout).
            Ok(Err(e)) => Err(Trouble::Again(self.api_error(e))),
        }
    }

    fn delete_job(&self, name: &str) -> Result<(), String> {
        let jobs = self.jobs.clone();
        let name = name.to_string();
        match self
            .rt
            .call(async move { jobs.delete(&name, &DeleteParams::background()).await })?
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(self.api_error(e)),
        }
    }

    /// Creates the Job; when the answer is lost or the name is taken, the Job found
    /// under the name is taken for this one only if it is this iteration's.
    fn create_job(&self, job: Job, start: &str) -> Result<Job, String> {
        let name = job.metadata.name.clone().unwrap_or_default();
        let mut last = String::new();
        for _ in 0..3 {
            let (jobs, j) = (self.jobs.clone(), job.clone());
            match self
                .rt
                .call(async move { jobs.create(&PostParams::default(), &j).await })?
            {
                Ok(created) => return Ok(created),
                // Refused (not a gateway's or the server's own trouble): asking
                // again would be refused again.
                Err(kube::Error::Api(s)) if s.code != 409 && s.code < 500 => {
                    return Err(self.api_error(s.message));
                }
                Err(e) => last = e.to_string(),
            }
            if let Some(found) = self.get_job(&name)? {
                let ours = found
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("agentloop.dev/start"))
                    .is_some_and(|s| s == start);
                if ours {
                    return Ok(found);
                }
                return Err(format!(
                    "a Job named {name} already exists in namespace {} and is not this iteration's: delete it (`kubectl delete job {name} -n {}`)",
                    self.namespace, self.namespace
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(self.api_error(last))
    }

    /// The Secret the Job's container gets its environment from, made before the Job
    /// (a container whose Secret is missing waits for the kubelet's next try).
    fn create_secret(
        &self,
        name: &str,
        labels: &serde_json::Value,
        env: &[String],
        values: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        let data = secret_data(env, values);
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "type": "Opaque",
        }))
        .map_err(|e| e.to_string())?;
        let secret = Secret {
            data: Some(data),
            ..secret
        };
        let mut last = String::new();
        for _ in 0..3 {
            let (secrets, secret) = (self.secrets.clone(), secret.clone());
            match self
                .rt
                .call(async move { secrets.create(&PostParams::default(), &secret).await })?
            {
                Ok(_) => return Ok(()),
                // Made by an attempt whose answer was lost: given this iteration's
                // values.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    let (secrets, name) = (self.secrets.clone(), name.to_string());
                    let patch = json!({"data": secret_data(env, values)});
                    return self
                        .rt
                        .call(async move {
                            secrets
                                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                                .await
                        })?
                        .map(drop)
                        .map_err(|e| self.api_error(e));
                }
                Err(kube::Error::Api(s)) if s.code < 500 => return Err(self.api_error(s.message)),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(self.api_error(last))
    }

    /// The Secret becomes the Job's: Kubernetes deletes it with the Job.
    fn own_secret(&self, job: &Job) -> Result<(), String> {
        let name = job.metadata.name.clone().unwrap_or_default();
        let patch = json!({"metadata": {"ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": name,
            "uid": job.metadata.uid, "blockOwnerDeletion": true,
        }]}});
        let secrets = self.secrets.clone();
        self.rt
            .call(async move {
                secrets
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
            })?
            .map(drop)
            .map_err(|e| self.api_error(e))
    }

    fn delete_secret(&self, name: &str) {
        let (secrets, name) = (self.secrets.clone(), name.to_string());
        let _ = self
            .rt
            .call(async move { secrets.delete(&name, &DeleteParams::background()).await });
    }

    /// Streams the pod's log into `path` until the container ends; the flag says when
    /// it is over. A stream that ends while the container still runs (a dropped
    /// connection, a proxy's timeout) is opened again, and what was already written
    /// is skipped: the log has each line once.
    fn stream_log(&self, pod: &str, path: PathBuf) -> Arc<AtomicBool> {
        let over = Arc::new(AtomicBool::new(false));
        let (pods, pod, done) = (self.pods.clone(), pod.to_string(), over.clone());
        self.rt.spawn(async move {
            let params = LogParams {
                follow: true,
                container: Some(CONTAINER.into()),
                ..Default::default()
            };
            let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            else {
                done.store(true, Ordering::SeqCst);
                return;
            };
            let (mut written, mut idle) = (0u64, 0u32);
            let mut buf = vec![0u8; 16 * 1024];
            while idle < 20 {
                let before = written;
                if let Ok(mut stream) = pods.log_stream(&pod, &params).await {
                    // What the last streams gave, again: skipped.
                    let mut skip = written;
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let fresh = n.saturating_sub(skip.min(n as u64) as usize);
                        skip = skip.saturating_sub(n as u64);
                        if fresh > 0 {
                            if file.write_all(&buf[n - fresh..n]).is_err() {
                                done.store(true, Ordering::SeqCst);
                                return;
                            }
                            written += fresh as u64;
                        }
                    }
                }
                if container_over(&pods, &pod).await {
                    break;
                }
                idle = if written > before { 0 } else { idle + 1 };
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            done.store(true, Ordering::SeqCst);
        });
        over
    }
}

/// Whether `pod`'s agent container has ended (or the pod is gone): its log has no more.
async fn container_over(pods: &Api<Pod>, pod: &str) -> bool {
    match pods.get(pod).await {
        Ok(p) => p
            .status
            .and_then(|s| s.container_statuses)
            .into_iter()
            .flatten()
            .filter(|c| c.name == CONTAINER)
            .any(|c| c.state.and_then(|s| s.terminated).is_some()),
        Err(kube::Error::Api(s)) => s.code == 404,
        Err(_) => false,
    }
}

impl Engine for KubernetesEngine {
    fn name(&self) -> &'static str {
        "Kubernetes"
    }

    fn word(&self) -> &'static str {
        "kubernetes"
    }

    fn default_program(&self) -> Result<String, String> {
        // As the image's PATH finds it.
        Ok("agentloop".into())
    }

    fn check(&self) -> Result<(), String> {
        let jobs = self.jobs.clone();
        self.rt
            .call(async move {
                jobs.list(&ListParams::default().labels(MANAGED).limit(1))
                    .await
            })?
            .map(drop)
            .map_err(|e| format!("cannot list Jobs through {}", self.api_error(e)))
    }

    fn submit(&self, s: &Submission<'_>) -> Result<String, String> {
        // The container has its own PATH, HOME and locale: only the agent's own
        // variables travel.
        let base: Vec<String> = agentloop_config::BASE_ENV
            .iter()
            .map(|p| p.to_string())
            .collect();
        let env: Vec<String> = s
            .env
            .iter()
            .filter(|k| !agentloop_config::env_allowed(k, &base))
            .cloned()
            .collect();
        let s = &Submission { env: &env, ..*s };
        self.watching.call_once(|| {
            self.rt.spawn(watch_pods(
                self.pods.clone(),
                spec::run_selector(s.run_id),
                Arc::downgrade(&self.watch),
            ));
        });
        let name = job_name(s.name);
        let job = spec::job(&self.settings, s, &name)?;
        // The job's spec (its prompt) with the agent's own variables: in the Secret.
        let mut values = s.secrets.clone();
        let (key, value) = spec::spec_entry(s.spec);
        values.insert(key, value);
        let labels = spec::labels(s.run_id, s.iteration);
        self.create_secret(&name, &labels, s.env, &values)?;
        let job = match self.create_job(job, s.start) {
            Ok(job) => job,
            Err(e) => {
                self.delete_secret(&name);
                return Err(e);
            }
        };
        if let Err(e) = self.own_secret(&job) {
            let _ = self.delete_job(&name);
            self.delete_secret(&name);
            return Err(e);
        }
        self.logs
            .lock()
            .map_err(|_| "poisoned".to_string())?
            .insert(name.clone(), s.log.to_path_buf());
        Ok(name)
    }

    fn follow(
        &self,
        id: &str,
        _name: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        let log = self.logs.lock().ok().and_then(|mut l| l.remove(id));
        let submitted = Instant::now();
        // Since when the API has not answered.
        let mut unanswered: Option<Instant> = None;
        let mut started = false;
        let mut cancelled = false;
        let mut last: Option<(String, Option<String>)> = None;
        let mut streaming: Option<Arc<AtomicBool>> = None;
        let mut seen_version = 0;
        loop {
            if stop.load(Ordering::SeqCst) && !cancelled {
                cancelled = self.delete_job(id).is_ok();
            }
            let (pod, version) = self.watch.next(id, seen_version, self.poll);
            seen_version = version;
            let job = match self.read_job(id) {
                Ok(job) => {
                    unanswered = None;
                    job
                }
                Err(Trouble::Refused(e)) => {
                    let _ = self.delete_job(id);
                    return Err((
                        AgentErrorKind::Spawn,
                        format!("Kubernetes job {id} cannot be followed: {e}"),
                    ));
                }
                // Asked again next round, for as long as a job may take to start:
                // `start_timeout` holds however the API answers.
                Err(Trouble::Again(e)) => {
                    let since = *unanswered.get_or_insert_with(Instant::now);
                    let waited = if started {
                        since.elapsed()
                    } else {
                        submitted.elapsed()
                    };
                    if waited >= self.settings.start_timeout {
                        let _ = self.delete_job(id);
                        return Err((
                            AgentErrorKind::Spawn,
                            format!(
                                "Kubernetes job {id}: no answer from the API for {}{}: {e}",
                                humantime::format_duration(Duration::from_secs(waited.as_secs())),
                                if started {
                                    ""
                                } else {
                                    ", the job not seen started"
                                },
                            ),
                        ));
                    }
                    continue;
                }
            };
            let phase = judge(pod.as_ref(), job.as_ref());
            if let (None, Some(pod), Some(path)) = (&streaming, &pod, &log)
                && pod.started()
            {
                streaming = Some(self.stream_log(&pod.name(), path.clone()));
            }
            // No pod: the Job controller's reason, which only its events carry.
            let refused = match (&phase, &pod) {
                (Phase::Waiting { .. }, None) => {
                    let (events, job) = (self.events.clone(), id.to_string());
                    self.rt
                        .call(events::failed_create(events, job))
                        .ok()
                        .flatten()
                }
                _ => None,
            };
            let phase = match (phase, &refused) {
                (Phase::Waiting { .. }, Some(why)) => Phase::Waiting {
                    state: "FailedCreate".into(),
                    reason: Some(why.clone()),
                },
                (phase, _) => phase,
            };
            let shown = phase.shown();
            if last.as_ref() != Some(&shown) {
                report(&shown.0, shown.1.as_deref());
                last = Some(shown);
            }
            match phase {
                Phase::Waiting { reason, .. } => {
                    let hopeless = refused.as_deref().is_some_and(events::final_refusal);
                    if !cancelled && hopeless {
                        let _ = self.delete_job(id);
                        return Err((
                            AgentErrorKind::Spawn,
                            format!(
                                "Kubernetes cannot create the pod of job {id}: {}",
                                reason.unwrap_or_default()
                            ),
                        ));
                    }
                    if !cancelled && submitted.elapsed() >= self.settings.start_timeout {
                        let _ = self.delete_job(id);
                        return Err((
                            AgentErrorKind::Spawn,
                            format!(
                                "Kubernetes cannot start job {id} within {}: {}",
                                humantime::format_duration(self.settings.start_timeout),
                                reason.unwrap_or_else(|| "no reason given".into())
                            ),
                        ));
                    }
                }
                Phase::Running => started = true,
                Phase::Over(_) if cancelled => {
                    return Err((
                        AgentErrorKind::Other,
                        format!("Kubernetes job {id} was cancelled: the run was stopped"),
                    ));
                }
                Phase::Over(ended) => {
                    // The log to its end before the result is judged.
                    let until = Instant::now() + Duration::from_secs(10);
                    while streaming
                        .as_ref()
                        .is_some_and(|s| !s.load(Ordering::SeqCst))
                        && Instant::now() < until
                    {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return Ok(ended);
                }
            }
        }
    }

    fn cancel(&self, id: Option<&str>, name: &str) {
        // The Job's name is its id, made from the token; its Secret has the same name,
        // and goes too (a driver killed before the Secret was given to the Job left
        // it nobody's).
        let job = id
            .map(str::to_string)
            .or_else(|| (!name.is_empty()).then(|| job_name(name)));
        if let Some(job) = job {
            let _ = self.delete_job(&job);
            self.delete_secret(&job);
        }
    }

    fn no_output_hint(&self) -> &'static str {
        "the pod's log could not be read (docs/EXECUTORS.md)"
    }

    fn reaches_local_paths(&self) -> bool {
        false
    }
}

/// The values of `env` (from our environment) and the agent's own variables as a
/// Secret's `data` (base64, as the API has them).
fn secret_data(env: &[String], secrets: &BTreeMap<String, String>) -> BTreeMap<String, ByteString> {
    env.iter()
        .filter_map(|k| {
            std::env::var(k)
                .ok()
                .map(|v| (k.clone(), ByteString(v.into_bytes())))
        })
        .chain(
            secrets
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes()))),
        )
        .collect()
}

/// Why the API gave no answer to use.
enum Trouble {
    /// It may answer if asked again: no answer, throttled, its own trouble.
    Again(String),
    /// It refused, and would again: forbidden, unauthorized, a bad request.
    Refused(String),
}
