//! How a Kubernetes job stands, read from its pod (as the watch last saw it) and its
//! Job (as the API has it now): waiting with the cluster's reason, running, or over
//! and how.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::Ended;

/// A pod as last seen: there, or deleted.
#[derive(Debug, Clone)]
pub enum Seen {
    Pod(Box<Pod>),
    Deleted(Box<Pod>),
}

impl Seen {
    pub(super) fn pod(&self) -> &Pod {
        match self {
            Seen::Pod(p) | Seen::Deleted(p) => p,
        }
    }

    pub(super) fn name(&self) -> String {
        self.pod().metadata.name.clone().unwrap_or_default()
    }

    fn phase(&self) -> &str {
        self.pod()
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    /// Whether its container has started (its log can be read).
    pub(super) fn started(&self) -> bool {
        matches!(self, Seen::Pod(_)) && matches!(self.phase(), "Running" | "Succeeded" | "Failed")
    }
}

/// Where a job is, from its pod and its Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Waiting {
        state: String,
        reason: Option<String>,
    },
    Running,
    Over(Ended),
}

impl Phase {
    /// What is reported of it: a state and a reason.
    pub(super) fn shown(&self) -> (String, Option<String>) {
        match self {
            Phase::Waiting { state, reason } => (state.clone(), reason.clone()),
            Phase::Running => ("Running".into(), None),
            Phase::Over(Ended::Completed) => ("Succeeded".into(), None),
            Phase::Over(Ended::Failed) => ("Failed".into(), None),
            Phase::Over(Ended::TimedOut) => ("Failed".into(), Some("DeadlineExceeded".into())),
            Phase::Over(Ended::OutOfMemory) => ("Failed".into(), Some("OOMKilled".into())),
            Phase::Over(Ended::Lost(how)) => ("Lost".into(), Some(how.clone())),
        }
    }
}

fn job_failed(job: &Job) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// How a job stands: `pod` as the watch last saw it, `job` as the API has it now
/// (`None`: there is no such Job).
pub fn judge(pod: Option<&Seen>, job: Option<&Job>) -> Phase {
    let succeeded = pod.is_some_and(|p| p.phase() == "Succeeded");
    let Some(job) = job else {
        return if succeeded {
            Phase::Over(Ended::Completed)
        } else {
            Phase::Over(Ended::Lost("was deleted".into()))
        };
    };
    if job_failed(job).is_some_and(|(reason, _)| reason == "DeadlineExceeded") {
        return Phase::Over(Ended::TimedOut);
    }
    let Some(seen) = pod else {
        return match job_failed(job) {
            Some((reason, message)) => Phase::Over(Ended::Lost(format!(
                "failed without a pod: {reason}: {message}"
            ))),
            None => Phase::Waiting {
                state: "Pending".into(),
                reason: Some("no pod yet".into()),
            },
        };
    };
    let p = seen.pod();
    let status = p.status.clone().unwrap_or_default();
    let conditions = status.conditions.clone().unwrap_or_default();
    let container = status
        .container_statuses
        .as_ref()
        .and_then(|c| c.first().cloned());
    if let Seen::Deleted(_) = seen {
        if succeeded {
            return Phase::Over(Ended::Completed);
        }
        let disrupted = conditions
            .iter()
            .find(|c| c.type_ == "DisruptionTarget" && c.status == "True");
        return Phase::Over(Ended::Lost(match disrupted {
            Some(c) => format!(
                "lost its pod {}: {} ({})",
                seen.name(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default()
            ),
            None => format!("lost its pod {}: deleted", seen.name()),
        }));
    }
    match seen.phase() {
        "Succeeded" => Phase::Over(Ended::Completed),
        "Failed" => {
            let terminated = container.and_then(|c| c.state).and_then(|s| s.terminated);
            match (status.reason.as_deref(), terminated.and_then(|t| t.reason)) {
                (_, Some(r)) if r == "OOMKilled" => Phase::Over(Ended::OutOfMemory),
                (Some("DeadlineExceeded"), _) => Phase::Over(Ended::TimedOut),
                (Some(r), _) => Phase::Over(Ended::Lost(format!(
                    "lost its pod {}: {r} ({})",
                    seen.name(),
                    status.message.clone().unwrap_or_default()
                ))),
                _ => Phase::Over(Ended::Failed),
            }
        }
        "Running" => Phase::Running,
        _ => {
            let unscheduled = conditions
                .iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False");
            let waiting = container.and_then(|c| c.state).and_then(|s| s.waiting);
            let reason = match (unscheduled, waiting) {
                (Some(c), _) => Some(format!(
                    "{}: {}",
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default()
                )),
                (None, Some(w)) => Some(match w.message {
                    Some(m) => format!("{}: {m}", w.reason.unwrap_or_default()),
                    None => w.reason.unwrap_or_default(),
                }),
                (None, None) => None,
            };
            Phase::Waiting {
                state: "Pending".into(),
                reason,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Seen {
        Seen::Pod(Box::new(serde_json::from_value(v).unwrap()))
    }

    #[test]
    fn a_job_is_judged_from_its_pod_and_its_job() {
        let job: Job = serde_json::from_value(json!({"metadata": {"name": "j"}})).unwrap();
        assert_eq!(
            judge(None, None),
            Phase::Over(Ended::Lost("was deleted".into()))
        );
        assert!(matches!(judge(None, Some(&job)), Phase::Waiting { .. }));
        let unscheduled = pod(
            json!({"metadata": {"name": "j-a"}, "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."}]}}),
        );
        assert_eq!(
            judge(Some(&unscheduled), Some(&job)),
            Phase::Waiting {
                state: "Pending".into(),
                reason: Some("Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.".into())
            }
        );
        let running = pod(json!({"metadata": {"name": "j-a"}, "status": {"phase": "Running"}}));
        assert_eq!(judge(Some(&running), Some(&job)), Phase::Running);
        let done = pod(json!({"metadata": {"name": "j-a"}, "status": {"phase": "Succeeded"}}));
        assert_eq!(judge(Some(&done), None), Phase::Over(Ended::Completed));
        let Seen::Pod(p) = running else {
            unreachable!()
        };
        let deleted = Seen::Deleted(p);
        assert!(
            matches!(judge(Some(&deleted), Some(&job)), Phase::Over(Ended::Lost(how)) if how.contains("deleted"))
        );
        let oom = pod(
            json!({"metadata": {"name": "j-a"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "agent", "image": "x", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}),
        );
        assert_eq!(
            judge(Some(&oom), Some(&job)),
            Phase::Over(Ended::OutOfMemory)
        );
        let failed = pod(json!({"metadata": {"name": "j-a"}, "status": {"phase": "Failed"}}));
        assert_eq!(judge(Some(&failed), Some(&job)), Phase::Over(Ended::Failed));
        let deadline: Job =
            serde_json::from_value(json!({"metadata": {"name": "j"}, "status": {"conditions": [
            {"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}))
            .unwrap();
        assert_eq!(
            judge(Some(&failed), Some(&deadline)),
            Phase::Over(Ended::TimedOut)
        );
    }
}
