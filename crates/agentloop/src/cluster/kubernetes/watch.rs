//! The run's pods as one watch sees them, and the small runtime the client runs on.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Condvar, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

use super::judge::Seen;

/// The run's pods as one watch sees them, by the Job they belong to.
#[derive(Default)]
pub(super) struct PodWatch {
    pods: Mutex<(BTreeMap<String, Seen>, u64)>,
    changed: Condvar,
}

impl PodWatch {
    fn job_of(pod: &Pod) -> Option<String> {
        pod.metadata.labels.as_ref()?.get("job-name").cloned()
    }

    fn saw(&self, seen: Seen) {
        let Some(job) = Self::job_of(seen.pod()) else {
            return;
        };
        if let Ok(mut p) = self.pods.lock() {
            p.0.insert(job, seen);
            p.1 += 1;
        }
        self.changed.notify_all();
    }

    /// After a fresh list: what it holds; a pod known before and missing from it
    /// was deleted meanwhile.
    fn listed(&self, items: Vec<Pod>) {
        let Ok(mut p) = self.pods.lock() else { return };
        let mut now: BTreeMap<String, Seen> = BTreeMap::new();
        for pod in items {
            if let Some(job) = Self::job_of(&pod) {
                now.insert(job, Seen::Pod(Box::new(pod)));
            }
        }
        for (job, before) in std::mem::take(&mut p.0) {
            now.entry(job)
                .or_insert_with(|| Seen::Deleted(Box::new(before.pod().clone())));
        }
        p.0 = now;
        p.1 += 1;
        drop(p);
        self.changed.notify_all();
    }

    /// `job`'s pod once the watch has news after `version`, or after `wait`.
    pub(super) fn next(&self, job: &str, version: u64, wait: Duration) -> (Option<Seen>, u64) {
        let Ok(mut p) = self.pods.lock() else {
            return (None, version);
        };
        if p.1 == version {
            p = match self.changed.wait_timeout(p, wait) {
                Ok((p, _)) => p,
                Err(_) => return (None, version),
            };
        }
        (p.0.get(job).cloned(), p.1)
    }
}

/// One watch of the run's pods (`selector`: agentloop's, of this run), for as long as
/// the engine lives: listed, then watched from the list's version; a watch that ends is resumed
/// from the last version seen, and one the API answers `410 Gone` (its history no
/// longer goes back that far) starts again from a new list.
pub(super) async fn watch_pods(api: Api<Pod>, selector: String, shared: Weak<PodWatch>) {
    'list: loop {
        let list = match api.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => list,
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if shared.strong_count() == 0 {
                    return;
                }
                continue;
            }
        };
        let mut version = list.metadata.resource_version.clone().unwrap_or_default();
        match shared.upgrade() {
            Some(w) => w.listed(list.items),
            None => return,
        }
        loop {
            let params = WatchParams::default().labels(&selector).timeout(290);
            let mut events = match api.watch(&params, &version).await {
                Ok(events) => events.boxed(),
                Err(kube::Error::Api(s)) if s.code == 410 => continue 'list,
                Err(_) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if shared.strong_count() == 0 {
                        return;
                    }
                    continue;
                }
            };
            while let Some(event) = events.next().await {
                let Some(w) = shared.upgrade() else { return };
                match event {
                    Ok(WatchEvent::Added(p) | WatchEvent::Modified(p)) => {
                        version = p.metadata.resource_version.clone().unwrap_or(version);
                        w.saw(Seen::Pod(Box::new(p)));
                    }
                    Ok(WatchEvent::Deleted(p)) => {
                        version = p.metadata.resource_version.clone().unwrap_or(version);
                        w.saw(Seen::Deleted(Box::new(p)));
                    }
                    Ok(WatchEvent::Bookmark(b)) => version = b.metadata.resource_version,
                    Ok(WatchEvent::Error(s)) if s.code == 410 => continue 'list,
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                }
            }
            if shared.strong_count() == 0 {
                return;
            }
        }
    }
}

/// A runtime for the client on a thread of its own, ended with the engine.
pub(super) struct Runtime {
    handle: tokio::runtime::Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// How long one call of the API may take: a server (or a proxy) that holds a request
/// past this is out of reach for that call, and the caller decides whether to ask
/// again.
pub(super) const CALL_LIMIT: Duration = Duration::from_secs(30);

impl Runtime {
    pub(super) fn start() -> Result<Runtime, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the Kubernetes client: {e}"))?;
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("kubernetes".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                })
            })
            .map_err(|e| format!("cannot start the Kubernetes client: {e}"))?;
        Ok(Runtime {
            handle,
            _stop: stop,
        })
    }

    pub(super) fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.handle.spawn(fut);
    }

    /// Runs `fut` on the runtime and waits for its answer, [`CALL_LIMIT`] at most (it
    /// is dropped then: the request is abandoned).
    pub(super) fn call<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(tokio::time::timeout(CALL_LIMIT, fut).await);
        });
        match rx.recv() {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(format!("no answer within {}s", CALL_LIMIT.as_secs())),
            Err(_) => Err("the Kubernetes client stopped".to_string()),
        }
    }
}
