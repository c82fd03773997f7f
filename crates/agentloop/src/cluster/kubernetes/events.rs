//! Why a Job has no pod: the Job controller says so only in an event (`FailedCreate`:
//! a namespace's Pod Security admission, a quota, a missing service account), never
//! in the Job's status.

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

/// The Job controller's last word on why it cannot make `job`'s pod, if it said one.
pub(super) async fn failed_create(events: Api<Event>, job: String) -> Option<String> {
    let params = ListParams::default().fields(&format!(
        "involvedObject.kind=Job,involvedObject.name={job}"
    ));
    let list = events.list(&params).await.ok()?;
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedCreate"))
        .max_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
        })
        .and_then(|e| e.message)
}

/// Whether the refusal is one no retry of the Job controller gets past: the pod breaks
/// the namespace's Pod Security Standard, so only a change of the settings helps.
pub(super) fn final_refusal(message: &str) -> bool {
    message.contains("violates PodSecurity")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pod_security_refusal_is_final() {
        assert!(final_refusal(
            "Error creating: pods \"agentloop-r-1-abcde\" is forbidden: violates PodSecurity \"restricted:latest\": host namespaces (hostNetwork=true)"
        ));
        assert!(!final_refusal(
            "Error creating: pods \"agentloop-r-1-abcde\" is forbidden: exceeded quota: compute, requested: cpu=2, used: cpu=8, limited: cpu=8"
        ));
    }
}
