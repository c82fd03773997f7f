//! The Job an iteration runs as, written so that a namespace enforcing the
//! `restricted` Pod Security Standard admits its pod: a user that is not root, no
//! privilege escalation, every capability dropped, the runtime's default seccomp
//! profile, a read-only root file system with the clone and the agent's home in an
//! `emptyDir`. The job's spec (the prompt with it) travels in the Job's Secret, never
//! in the Job's own spec, and reaches the container as a file of a `secret` volume: an
//! environment variable holds at most 128 KiB on Linux, and a long task's prompt is
//! more. The agent's variables come from the same Secret, each by name.

use agentloop_config::{KubernetesConfig, SCRATCH_PATH, SCRATCH_VOLUME, SPEC_MOUNT, SPEC_VOLUME};
use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use super::super::Submission;
use super::super::job::SPEC_FILE_VARIABLE;
use super::{CONTAINER, label_value};

/// The Secret's key that holds the job's spec.
pub(super) const SPEC_KEY: &str = "agentloop-job-spec.json";

/// The labels of everything made for iteration `iteration` of `run`.
pub(super) fn labels(run: &str, iteration: u32) -> Value {
    json!({
        "app.kubernetes.io/managed-by": "agentloop",
        "agentloop.dev/run": label_value(run),
        "agentloop.dev/iteration": iteration.to_string(),
    })
}

/// The label selector of a run's pods.
pub(super) fn run_selector(run: &str) -> String {
    format!("{},agentloop.dev/run={}", super::MANAGED, label_value(run))
}

/// The Job of iteration `s`, named `name`, whose container gets its environment (the
/// job's spec included) from the Secret of the same name.
pub(super) fn job(k: &KubernetesConfig, s: &Submission<'_>, name: &str) -> Result<Job, String> {
    let labels = labels(s.run_id, s.iteration);
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"agentloop.dev/title": s.title, "agentloop.dev/start": s.start},
        },
        "spec": {
            // A failed pod is not run again by Kubernetes: agentloop's policy decides
            // what comes next, as a new iteration.
            "backoffLimit": 0,
            "activeDeadlineSeconds": s.agent_timeout.as_secs() + 600,
            "ttlSecondsAfterFinished": k.keep_finished.as_secs(),
            "template": {"metadata": {"labels": labels}, "spec": pod(k, s.program, name, &variables(s))},
        },
    });
    serde_json::from_value(job).map_err(|e| format!("the Job's spec: {e}"))
}

/// The names of the variables the container gets from the Secret: ours it is given
/// and the agent's own.
fn variables(s: &Submission<'_>) -> Vec<String> {
    let mut names: Vec<String> = s.env.iter().chain(s.secrets.keys()).cloned().collect();
    names.sort();
    names.dedup();
    names
}

/// The pod template's spec: its container gets `variables` from the Secret `secret`
/// (each optional: one of ours that is not set is not in it), and the spec as a file.
fn pod(k: &KubernetesConfig, program: &str, secret: &str, variables: &[String]) -> Value {
    let mut resources = serde_json::Map::new();
    for (key, value) in [("cpu", &k.cpu), ("memory", &k.memory)] {
        if let Some(v) = value {
            resources.insert(key.to_string(), json!(v));
        }
    }
    let mut mounts = vec![
        json!({"name": SCRATCH_VOLUME, "mountPath": SCRATCH_PATH}),
        json!({"name": SPEC_VOLUME, "mountPath": SPEC_MOUNT, "readOnly": true}),
    ];
    mounts.extend(k.volume_mounts.iter().cloned());
    let mut volumes = vec![
        json!({"name": SCRATCH_VOLUME, "emptyDir": {}}),
        // Read by the pod's user through its group (`fsGroup`): 0440.
        json!({"name": SPEC_VOLUME, "secret": {
            "secretName": secret,
            "items": [{"key": SPEC_KEY, "path": "spec.json"}],
            "defaultMode": 0o440,
        }}),
    ];
    volumes.extend(k.volumes.iter().cloned());
    let mut env = vec![
        json!({"name": "TMPDIR", "value": SCRATCH_PATH}),
        json!({"name": SPEC_FILE_VARIABLE, "value": format!("{SPEC_MOUNT}/spec.json")}),
    ];
    env.extend(variables.iter().map(|name| {
        json!({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": name, "optional": true}}})
    }));
    let container = json!({
        "name": CONTAINER,
        "image": k.image,
        "imagePullPolicy": k.pull_policy(),
        "command": [program, "job"],
        // Every value of the job's — its spec, the agent's credentials — from the
        // Job's Secret: none is in the spec anyone who may read Jobs reads.
        "env": env,
        "resources": {"requests": resources, "limits": resources},
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": k.read_only_root,
            "runAsNonRoot": true,
            "runAsUser": k.run_as_user,
        },
    });
    let mut pod = json!({
        "restartPolicy": "Never",
        // The agent gets no credentials to the cluster that runs it.
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 30,
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": k.run_as_user,
            "fsGroup": k.run_as_user,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    });
    if let Some(sa) = &k.service_account {
        pod["serviceAccountName"] = json!(sa);
    }
    if !k.node_selector.is_empty() {
        pod["nodeSelector"] = json!(k.node_selector);
    }
    if !k.tolerations.is_empty() {
        pod["tolerations"] = json!(k.tolerations);
    }
    if let Some(a) = &k.affinity {
        pod["affinity"] = a.clone();
    }
    if !k.image_pull_secrets.is_empty() {
        pod["imagePullSecrets"] = k
            .image_pull_secrets
            .iter()
            .map(|n| json!({"name": n}))
            .collect();
    }
    pod
}

/// Whether the settings make a Job the API's types accept (a toleration, an affinity
/// or a volume written with a wrong field's type is refused before the run starts).
pub(super) fn check(k: &KubernetesConfig) -> Result<(), String> {
    let spec = pod(k, "agentloop", "agentloop-check", &[]);
    serde_json::from_value::<k8s_openapi::api::core::v1::PodSpec>(spec)
        .map(drop)
        .map_err(|e| {
            format!("[executor.kubernetes]: the pod it describes is not one Kubernetes reads: {e}")
        })
}

/// The job's spec as the Secret's entry.
pub(super) fn spec_entry(spec: &str) -> (String, String) {
    (SPEC_KEY.to_string(), spec.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_type_in_a_toleration_is_refused_with_its_field() {
        let mut k = KubernetesConfig {
            image: "i".into(),
            ..Default::default()
        };
        assert!(check(&k).is_ok());
        k.tolerations = vec![json!({"key": "gpu", "tolerationSeconds": "soon"})];
        let e = check(&k).unwrap_err();
        assert!(e.contains("not one Kubernetes reads"), "{e}");
    }
}
