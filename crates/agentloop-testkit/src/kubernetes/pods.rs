//! What the controllers and the kubelet both say of pods: the node's name, a pod's
//! phase, whether it is over, and its removal (a failure of its Job if it had not
//! ended).

use serde_json::{Value, json};

use super::store::{Key, Kind, Store};

pub const NODE_NAME: &str = "stand-in-node-1";

pub fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("Pending")
}

pub fn over(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

pub fn pod_key(ns: &str, name: &str) -> Key {
    (Kind::Pod, ns.to_string(), name.to_string())
}

/// A pod's failure, counted on the Job that owns it.
pub fn count_failure(st: &mut Store, pod: &Value) {
    let Some(owner) = pod["metadata"]["ownerReferences"][0]["name"].as_str() else {
        return;
    };
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let key = (Kind::Job, ns.to_string(), owner.to_string());
    st.update(&key, |j| {
        let n = j["status"]["failed"].as_u64().unwrap_or(0);
        j["status"]["failed"] = json!(n + 1);
    });
}

/// A pod's object goes: a pod that had not ended is a failure of its Job.
pub fn remove_pod(st: &mut Store, key: &Key) {
    if let Some(pod) = st.remove(key)
        && !over(&pod)
    {
        count_failure(st, &pod);
    }
}
