//! Pod Security admission, as a namespace labelled
//! `pod-security.kubernetes.io/enforce: restricted` has it: a pod that breaks the
//! `restricted` profile is refused, and the Job controller that tried to make it
//! says so in a `FailedCreate` event on the Job (its status says nothing).
//!
//! The checks are those of the profile that a pod spec shows: host namespaces and
//! ports, privileged containers, added capabilities, `hostPath` and the other volume
//! types the profile forbids, privilege escalation, capabilities not dropped,
//! `runAsNonRoot`, `runAsUser: 0` and the seccomp profile. AppArmor, SELinux,
//! `/proc` mount types and sysctls are not looked at.

use serde_json::{Value, json};

use super::store::{Key, Kind, Store, now, since};

/// The volume types the `restricted` profile allows.
const VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// What in `spec` (a pod's) breaks the `restricted` profile, in the API's words.
pub fn restricted_violations(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let host: Vec<&str> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|k| spec[*k] == true)
        .collect();
    if !host.is_empty() {
        out.push(format!(
            "host namespaces ({})",
            host.iter()
                .map(|k| format!("{k}=true"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let pod = &spec["securityContext"];
    let containers: Vec<&Value> = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(spec["initContainers"].as_array().into_iter().flatten())
        .collect();
    let name = |c: &Value| c["name"].as_str().unwrap_or("").to_string();
    let each = |check: &dyn Fn(&Value) -> bool| -> Vec<String> {
        containers
            .iter()
            .filter(|c| !check(c))
            .map(|c| format!("\"{}\"", name(c)))
            .collect()
    };
    let privileged = each(&|c| c["securityContext"]["privileged"] != true);
    if !privileged.is_empty() {
        out.push(format!(
            "privileged (container {} must not set securityContext.privileged=true)",
            privileged.join(", ")
        ));
    }
    let ports = each(&|c| {
        c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|p| p["hostPort"].as_u64().unwrap_or(0) == 0)
    });
    if !ports.is_empty() {
        out.push(format!(
            "hostPort (container {} uses hostPort)",
            ports.join(", ")
        ));
    }
    let bad_volumes: Vec<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| {
            v.as_object().is_some_and(|o| {
                o.keys()
                    .any(|k| k != "name" && !VOLUMES.contains(&k.as_str()))
            })
        })
        .map(|v| format!("\"{}\"", v["name"].as_str().unwrap_or("")))
        .collect();
    if !bad_volumes.is_empty() {
        out.push(format!(
            "restricted volume types (volume {} uses a restricted volume type)",
            bad_volumes.join(", ")
        ));
    }
    let escalating = each(&|c| c["securityContext"]["allowPrivilegeEscalation"] == false);
    if !escalating.is_empty() {
        out.push(format!(
            "allowPrivilegeEscalation != false (container {} must set securityContext.allowPrivilegeEscalation=false)",
            escalating.join(", ")
        ));
    }
    let capabilities = each(&|c| {
        let caps = &c["securityContext"]["capabilities"];
        caps["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL"))
            && caps["add"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|x| x == "NET_BIND_SERVICE")
    });
    if !capabilities.is_empty() {
        out.push(format!(
            "unrestricted capabilities (container {} must set securityContext.capabilities.drop=[\"ALL\"])",
            capabilities.join(", ")
        ));
    }
    let non_root = each(&|c| match &c["securityContext"]["runAsNonRoot"] {
        Value::Bool(b) => *b,
        _ => pod["runAsNonRoot"] == true,
    });
    if !non_root.is_empty() {
        out.push(format!(
            "runAsNonRoot != true (pod or container {} must set securityContext.runAsNonRoot=true)",
            non_root.join(", ")
        ));
    }
    let root =
        pod["runAsUser"] == 0 || !each(&|c| c["securityContext"]["runAsUser"] != 0).is_empty();
    if root {
        out.push("runAsUser=0 (pod and containers must not set runAsUser=0)".into());
    }
    let seccomp_ok = |s: &Value| matches!(s["type"].as_str(), Some("RuntimeDefault" | "Localhost"));
    let seccomp = each(&|c| {
        let own = &c["securityContext"]["seccompProfile"];
        if own.is_null() {
            seccomp_ok(&pod["seccompProfile"])
        } else {
            seccomp_ok(own)
        }
    });
    if !seccomp.is_empty() {
        out.push(format!(
            "seccompProfile (pod or container {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
            seccomp.join(", ")
        ));
    }
    out
}

/// Records (or counts again) the Job controller's `FailedCreate` event on Job `job`.
pub fn failed_create(st: &mut Store, job: &Key, uid: &str, message: &str) {
    let key = (
        Kind::Event,
        job.1.clone(),
        format!("{}.failedcreate", job.2),
    );
    let message = format!("Error creating: {message}");
    if st.get(&key).is_some() {
        let seconds_ago = st.get(&key).map(|e| since(&e["lastTimestamp"]));
        if seconds_ago.is_some_and(|d| d.as_secs() >= 1) {
            st.update(&key, |e| {
                e["count"] = json!(e["count"].as_u64().unwrap_or(1) + 1);
                e["lastTimestamp"] = json!(now());
                e["message"] = json!(message);
            });
        }
        return;
    }
    let event = json!({
        "metadata": {"name": key.2, "namespace": job.1},
        "involvedObject": {
            "kind": "Job", "apiVersion": "batch/v1", "namespace": job.1,
            "name": job.2, "uid": uid,
        },
        "reason": "FailedCreate",
        "message": message,
        "type": "Warning",
        "count": 1,
        "firstTimestamp": now(),
        "lastTimestamp": now(),
        "source": {"component": "job-controller"},
    });
    let _ = st.create(Kind::Event, &job.1, event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restricted_profile_names_what_a_pod_breaks() {
        let bare = json!({"containers": [{"name": "agent"}]});
        let v = restricted_violations(&bare);
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(
            v[0].starts_with("allowPrivilegeEscalation != false"),
            "{v:?}"
        );
        let ok = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "agent", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
            }}],
            "volumes": [{"name": "s", "emptyDir": {}}],
        });
        assert!(restricted_violations(&ok).is_empty());
        let mut host = ok.clone();
        host["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]);
        host["hostNetwork"] = json!(true);
        let v = restricted_violations(&host);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[1].contains("volume \"root\""), "{v:?}");
    }
}
