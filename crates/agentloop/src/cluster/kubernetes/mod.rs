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

use agentloop_core::config::{Config, KubernetesConfig};
use agentloop_core::journal::AgentErrorKind;
use futures::AsyncReadExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

mod judge;
mod watch;

use super::job::SPEC_VARIABLE;
use super::{Ended, Engine, Submission};
use judge::{Phase, judge};
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
            secrets: Api::namespaced(client, &namespace),
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
        let jobs = self.jobs.clone();
        let name = name.to_string();
        match self.rt.call(async move { jobs.get(&name).await })? {
            Ok(j) => Ok(Some(j)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.api_error(e)),
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
    /// it is over.
    fn stream_log(&self, pod: &str, path: PathBuf) -> Arc<AtomicBool> {
        let over = Arc::new(AtomicBool::new(false));
        let (pods, pod, done) = (self.pods.clone(), pod.to_string(), over.clone());
        self.rt.spawn(async move {
            let params = LogParams {
                follow: true,
                container: Some(CONTAINER.into()),
                ..Default::default()
            };
            if let Ok(mut stream) = pods.log_stream(&pod, &params).await
                && let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 || file.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        over
    }

    /// The Job this iteration runs as.
    fn job_spec(&self, s: &Submission<'_>, name: &str) -> Result<Job, String> {
        let k = &self.settings;
        let labels = json!({
            "app.kubernetes.io/managed-by": "agentloop",
            "agentloop.dev/run": label_value(s.run_id),
            "agentloop.dev/iteration": s.iteration.to_string(),
        });
        let mut resources = serde_json::Map::new();
        for (key, value) in [("cpu", &k.cpu), ("memory", &k.memory)] {
            if let Some(v) = value {
                resources.insert(key.to_string(), json!(v));
            }
        }
        let mut container = json!({
            "name": CONTAINER,
            "image": k.image,
            "command": [s.program, "job"],
            "env": [{"name": SPEC_VARIABLE, "value": s.spec}],
            "resources": {"requests": resources, "limits": resources},
        });
        if !s.env.is_empty() || !s.secrets.is_empty() {
            // Every variable of the agent's, from the Job's Secret.
            container["envFrom"] = json!([{"secretRef": {"name": name}}]);
        }
        let mut pod = json!({
            "restartPolicy": "Never",
            // The agent gets no credentials to the cluster that runs it.
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 30,
            "containers": [container],
        });
        if let Some(sa) = &k.service_account {
            pod["serviceAccountName"] = json!(sa);
        }
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {"agentloop.dev/title": s.title, "agentloop.dev/start": s.start},
            },
            "spec": {
                // A failed pod is not run again by Kubernetes: agentloop's policy
                // decides what comes next, as a new iteration.
                "backoffLimit": 0,
                "activeDeadlineSeconds": s.agent_timeout.as_secs() + 600,
                "ttlSecondsAfterFinished": k.keep_finished.as_secs(),
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        });
        serde_json::from_value(job).map_err(|e| format!("the Job's spec: {e}"))
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
        let base: Vec<String> = agentloop_core::config::BASE_ENV
            .iter()
            .map(|p| p.to_string())
            .collect();
        let env: Vec<String> = s
            .env
            .iter()
            .filter(|k| !agentloop_core::exec::supervise::env_allowed(k, &base))
            .cloned()
            .collect();
        let s = &Submission { env: &env, ..*s };
        let secret = !s.env.is_empty() || !s.secrets.is_empty();
        self.watching.call_once(|| {
            self.rt
                .spawn(watch_pods(self.pods.clone(), Arc::downgrade(&self.watch)));
        });
        let name = job_name(s.run_id, s.iteration);
        let spec = self.job_spec(s, &name)?;
        if secret {
            let labels = serde_json::to_value(&spec.metadata.labels).unwrap_or_default();
            self.create_secret(&name, &labels, s.env, s.secrets)?;
        }
        let job = match self.create_job(spec, s.start) {
            Ok(job) => job,
            Err(e) => {
                if secret {
                    self.delete_secret(&name);
                }
                return Err(e);
            }
        };
        if secret && let Err(e) = self.own_secret(&job) {
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
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        let log = self.logs.lock().ok().and_then(|mut l| l.remove(id));
        let submitted = Instant::now();
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
            let job = match self.get_job(id) {
                Ok(job) => job,
                // The API did not answer: ask again next round.
                Err(_) => continue,
            };
            let phase = judge(pod.as_ref(), job.as_ref());
            let shown = phase.shown();
            if last.as_ref() != Some(&shown) {
                report(&shown.0, shown.1.as_deref());
                last = Some(shown);
            }
            if let (None, Some(pod), Some(path)) = (&streaming, &pod, &log)
                && pod.started()
            {
                streaming = Some(self.stream_log(&pod.name(), path.clone()));
            }
            match phase {
                Phase::Waiting { reason, .. } => {
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
                Phase::Running => {}
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

    fn cancel(&self, id: &str) {
        let _ = self.delete_job(id);
    }

    fn no_output_hint(&self) -> &'static str {
        "the pod's log could not be read (docs/EXECUTORS.md)"
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

/// A Job's name for iteration `n` of `run`: a DNS label of at most 63 characters.
pub fn job_name(run: &str, n: u32) -> String {
    let tail = format!("-{n}");
    let room = 63 - "agentloop-".len() - tail.len();
    let run = label_value(run)
        .to_ascii_lowercase()
        .replace(['_', '.'], "-");
    let run: String = run.chars().take(room).collect();
    format!("agentloop-{}{tail}", run.trim_matches('-'))
}

/// `s` as a label value: letters, digits, `-`, `_`, `.`, at most 63, alphanumeric at
/// both ends.
fn label_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    v.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(
            job_name("20261122-104259-042-3fa2", 7),
            "agentloop-20261122-104259-042-3fa2-7"
        );
        let long = job_name(&"Run_1.x".repeat(20), 12345);
        assert!(long.len() <= 63 && long.ends_with("-12345"), "{long}");
        assert!(
            long.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }
}
