//! `[executor]`: where agent iterations run. `local` (the default) runs each one as a
//! process on this machine; `slurm` submits each one as a job to an existing Slurm
//! cluster and `kubernetes` creates a `batch/v1` Job for each one: a job gets the
//! task's branch from the run's git remote and pushes its result back there.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use agentloop_ground::values::duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(transform = crate::bounds::executor)]
pub struct ExecutorConfig {
    /// Where iterations run: `local` (this machine), `slurm` (a batch job each) or
    /// `kubernetes` (a Job each).
    pub kind: ExecutorKind,
    /// The git remote jobs fetch a task's branch from and push results to: a remote's
    /// name in this repository, or a URL (a bare repository on a shared disk, a forge).
    #[schemars(regex(pattern = crate::bounds::NOT_BLANK))]
    pub remote: String,
    /// The `agentloop` program on the cluster's nodes (default: this one's path, which
    /// suits nodes that share this machine's disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// How often the state of a job is asked for.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::nonzero_schema")]
    pub poll: Duration,
    pub slurm: SlurmConfig,
    pub kubernetes: KubernetesConfig,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    #[default]
    Local,
    Slurm,
    Kubernetes,
}

impl ExecutorKind {
    pub fn word(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Slurm => "slurm",
            ExecutorKind::Kubernetes => "kubernetes",
        }
    }
}

/// What each iteration's Kubernetes Job is made of. The cluster is the one the
/// kubeconfig names (`KUBECONFIG`, `~/.kube/config`, or the pod's own service account
/// when the driver runs in the cluster).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KubernetesConfig {
    /// The kubeconfig context to use (default: its current one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The namespace of the Jobs (default: the context's, else `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The container image: `agentloop`, git and the agent's CLI installed.
    pub image: String,
    /// CPU the container requests and is limited to (`"2"`, `"500m"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory the container requests and is limited to (`"4Gi"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The service account the pods run as (default: the namespace's; its token is
    /// never mounted into the agent's container).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// How long a pod may wait to be scheduled and started before the iteration is
    /// given up with the cluster's reason.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub start_timeout: Duration,
    /// How long a finished Job is kept before Kubernetes deletes it with its pod
    /// (`ttlSecondsAfterFinished`).
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub keep_finished: Duration,
    /// The user id the agent's container runs as (`securityContext.runAsUser`; never
    /// 0: the pods pass the `restricted` Pod Security Standard).
    pub run_as_user: u32,
    /// The container's root file system is read-only
    /// (`readOnlyRootFilesystem`); the clone, the scratch files and the agent's home
    /// are in an `emptyDir` mounted at `/tmp`.
    pub read_only_root: bool,
    /// `nodeSelector`: labels a node must have.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// `tolerations`, as Kubernetes writes them (`{ key, operator, value, effect }`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<BTreeMap<String, serde_json::Value>>")]
    pub tolerations: Vec<serde_json::Value>,
    /// `affinity`, as Kubernetes writes it (`nodeAffinity`, `podAffinity`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub affinity: Option<serde_json::Value>,
    /// When the image is pulled (`Always`, `IfNotPresent`, `Never`). Unset, as
    /// Kubernetes decides it, said in the Job: `Always` for a `:latest` or untagged
    /// image, `IfNotPresent` for a tag or a digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,
    /// The Pod Security Standard the pods pass (`restricted`, `baseline`,
    /// `privileged`): `volumes` of a type it does not allow are refused before the run.
    pub pod_security: PodSecurity,
    /// Secrets of the namespace to pull the image with (`imagePullSecrets`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<String>,
    /// More volumes of the pod, as Kubernetes writes them (`{ name, configMap = … }`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<BTreeMap<String, serde_json::Value>>")]
    pub volumes: Vec<serde_json::Value>,
    /// Where the container mounts them (`{ name, mountPath, readOnly }`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<BTreeMap<String, serde_json::Value>>")]
    pub volume_mounts: Vec<serde_json::Value>,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        KubernetesConfig {
            context: None,
            namespace: None,
            image: String::new(),
            cpu: None,
            memory: None,
            service_account: None,
            start_timeout: Duration::from_secs(600),
            keep_finished: Duration::from_secs(3600),
            run_as_user: 1000,
            read_only_root: true,
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            affinity: None,
            image_pull_policy: None,
            pod_security: PodSecurity::Restricted,
            image_pull_secrets: Vec::new(),
            volumes: Vec::new(),
            volume_mounts: Vec::new(),
        }
    }
}

impl KubernetesConfig {
    /// Checks the settings a Job is made of: an image, and quantities Kubernetes reads.
    /// The pull policy the Job says: the configured one, else Kubernetes' own rule.
    pub fn pull_policy(&self) -> PullPolicy {
        if let Some(p) = self.image_pull_policy {
            return p;
        }
        // The tag is after the last `:` of the last path component (a registry's
        // port is before a `/`).
        let image = self.image.split('@').next().unwrap_or("");
        let last = image.rsplit('/').next().unwrap_or("");
        let tagged =
            self.image.contains('@') || last.split_once(':').is_some_and(|(_, t)| t != "latest");
        if tagged {
            PullPolicy::IfNotPresent
        } else {
            PullPolicy::Always
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.image.trim().is_empty() {
            return Err("executor.kubernetes.image: the container image the jobs run is required (one with `agentloop`, git and the agent's CLI)".into());
        }
        if self.image.chars().any(char::is_whitespace) {
            return Err(format!(
                "executor.kubernetes.image: `{}` is not an image reference",
                self.image
            ));
        }
        for (key, value) in [("cpu", &self.cpu), ("memory", &self.memory)] {
            if let Some(v) = value.as_ref().filter(|v| !quantity(v)) {
                return Err(format!(
                    "executor.kubernetes.{key}: `{v}` is not a Kubernetes quantity (e.g. `2`, `500m`, `4Gi`)"
                ));
            }
        }
        if self.run_as_user == 0 {
            return Err("executor.kubernetes.run_as_user: 0 is root, which the `restricted` Pod Security Standard refuses: give the image's own user id (e.g. 1000)".into());
        }
        for (key, list) in [
            ("tolerations", &self.tolerations),
            ("volumes", &self.volumes),
            ("volume_mounts", &self.volume_mounts),
        ] {
            if let Some(i) = list.iter().position(|v| !v.is_object()) {
                return Err(format!(
                    "executor.kubernetes.{key}[{i}]: a table is expected, as Kubernetes writes it"
                ));
            }
        }
        if self.affinity.as_ref().is_some_and(|a| !a.is_object()) {
            return Err("executor.kubernetes.affinity: a table is expected, as Kubernetes writes it (`nodeAffinity`, `podAffinity`, …)".into());
        }
        let names: Vec<&str> = self
            .volumes
            .iter()
            .map(|v| v["name"].as_str().unwrap_or(""))
            .collect();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(format!(
                    "executor.kubernetes.volumes[{i}]: a `name` is required"
                ));
            }
            if *name == SCRATCH_VOLUME || *name == SPEC_VOLUME || names[..i].contains(name) {
                return Err(format!(
                    "executor.kubernetes.volumes[{i}]: the name `{name}` is taken"
                ));
            }
            let kinds: Vec<&String> = self.volumes[i]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .filter(|k| *k != "name")
                .collect();
            let refused = kinds.iter().find(|k| match self.pod_security {
                PodSecurity::Restricted => !crate::bounds::RESTRICTED_VOLUMES.contains(&k.as_str()),
                PodSecurity::Baseline => k.as_str() == "hostPath",
                PodSecurity::Privileged => false,
            });
            if let Some(kind) = refused {
                return Err(format!(
                    "executor.kubernetes.volumes[{i}]: `{name}` is a `{kind}` volume, which the `{}` Pod Security Standard does not allow; the pods are written to pass it (set executor.kubernetes.pod_security for a namespace that admits more)",
                    match self.pod_security {
                        PodSecurity::Restricted => "restricted",
                        PodSecurity::Baseline => "baseline",
                        PodSecurity::Privileged => "privileged",
                    }
                ));
            }
        }
        for (i, m) in self.volume_mounts.iter().enumerate() {
            let (name, path) = (
                m["name"].as_str().unwrap_or(""),
                m["mountPath"].as_str().unwrap_or(""),
            );
            if !names.contains(&name) {
                return Err(format!(
                    "executor.kubernetes.volume_mounts[{i}]: `name` must be one of executor.kubernetes.volumes (got `{name}`)"
                ));
            }
            let at = path.trim_end_matches('/');
            if !path.starts_with('/') || at == SCRATCH_PATH || at == SPEC_MOUNT {
                return Err(format!(
                    "executor.kubernetes.volume_mounts[{i}]: `mountPath` must be an absolute path other than {SCRATCH_PATH} and {SPEC_MOUNT} (got `{path}`)"
                ));
            }
        }
        Ok(())
    }
}

/// The `emptyDir` volume a Job's clone and scratch files are in, and where it is
/// mounted.
pub const SCRATCH_VOLUME: &str = "agentloop-scratch";
pub const SCRATCH_PATH: &str = "/tmp";
/// The volume of the Job's Secret the job's spec is read from, and where it is mounted.
pub const SPEC_VOLUME: &str = "agentloop-spec";
pub const SPEC_MOUNT: &str = "/var/run/agentloop";

/// When Kubernetes pulls the image (`imagePullPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// The Pod Security Standard the pods are written to pass, and the settings held to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PodSecurity {
    /// The `restricted` standard: only `configMap`, `csi`, `downwardAPI`, `emptyDir`,
    /// `ephemeral`, `persistentVolumeClaim`, `projected` and `secret` volumes.
    #[default]
    Restricted,
    /// The `baseline` standard: no `hostPath` volume.
    Baseline,
    /// No standard: any volume (for a namespace that admits privileged pods).
    Privileged,
}

/// Whether `s` reads as a Kubernetes resource quantity: a decimal number and an
/// optional suffix.
fn quantity(s: &str) -> bool {
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    !number.is_empty()
        && number.parse::<f64>().is_ok()
        && (suffix.is_empty() || crate::bounds::QUANTITY_SUFFIXES.contains(&suffix))
}

/// What each iteration's Slurm job asks for (`sbatch` options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmConfig {
    /// The partition jobs are submitted to (`sbatch --partition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::SLURM_WORD))]
    pub partition: Option<String>,
    /// The account jobs are charged to (`sbatch --account`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::SLURM_WORD))]
    pub account: Option<String>,
    /// `--time`: minutes, or `[days-]hours:minutes:seconds` (default: the agent's
    /// timeout and ten minutes, not the partition's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::bounds::slurm_time")]
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub cpus: Option<u32>,
    /// `--mem`: e.g. `4G`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::bounds::SLURM_MEMORY))]
    pub memory: Option<String>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            kind: ExecutorKind::Local,
            remote: "origin".into(),
            program: None,
            poll: Duration::from_secs(1),
            slurm: SlurmConfig::default(),
            kubernetes: KubernetesConfig::default(),
        }
    }
}

impl SlurmConfig {
    /// The `sbatch` options these settings make, checked: each value is one plain
    /// word, so none can carry another option.
    pub fn options(&self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let mut add = |flag: &str, key: &str, value: Option<String>| -> Result<(), String> {
            if let Some(v) = value {
                if v.is_empty()
                    || v.starts_with('-')
                    || !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.:-+".contains(c))
                {
                    return Err(format!("executor.slurm.{key}: `{v}` is not a plain value"));
                }
                out.push(format!("--{flag}={v}"));
            }
            Ok(())
        };
        add("partition", "partition", self.partition.clone())?;
        add("account", "account", self.account.clone())?;
        if let Some(t) = self.time_limit.as_deref().filter(|t| !slurm_time(t)) {
            return Err(format!(
                "executor.slurm.time_limit: `{t}` is not a Slurm time (minutes, `hours:minutes:seconds` or `days-hours:minutes:seconds`)"
            ));
        }
        if self.cpus == Some(0) {
            return Err("executor.slurm.cpus: a job needs at least 1".into());
        }
        if let Some(m) = self.memory.as_deref().filter(|m| !slurm_memory(m)) {
            return Err(format!(
                "executor.slurm.memory: `{m}` is not a Slurm memory size up to 1024T (a whole number with K, M, G or T, e.g. `8G`)"
            ));
        }
        add("time", "time_limit", self.time_limit.clone())?;
        add("cpus-per-task", "cpus", self.cpus.map(|c| c.to_string()))?;
        add("mem", "memory", self.memory.clone())?;
        Ok(out)
    }
}

/// Whether `t` is a time `sbatch --time` reads: minutes, `minutes:seconds`,
/// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes`,
/// `days-hours:minutes:seconds`, or `UNLIMITED`; not zero.
fn slurm_time(t: &str) -> bool {
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") {
        return true;
    }
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let number = |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = rest.split(':').collect();
    let shape = days.is_none_or(number)
        && parts.iter().all(|p| number(p))
        && (1..=3).contains(&parts.len());
    shape && t.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// Whether `m` is a size `sbatch --mem` reads (megabytes by default, or K, M, G, T),
/// from 1 megabyte up to 1024T.
fn slurm_memory(m: &str) -> bool {
    let (n, unit) = match m.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&m[..i], c.to_ascii_uppercase()),
        _ => (m, 'M'),
    };
    let Ok(n) = n.parse::<u64>() else {
        return false;
    };
    let mib = match unit {
        'K' => n / 1024,
        'M' => n,
        'G' => n.saturating_mul(1024),
        'T' => n.saturating_mul(1024 * 1024),
        _ => return false,
    };
    (1..=1024 * 1024 * 1024).contains(&mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_values_are_checked_before_a_job_asks_for_them() {
        for t in ["30", "90:00", "2:00:00", "1-02:00:00", "1-2", "UNLIMITED"] {
            assert!(slurm_time(t), "{t}");
        }
        for t in ["forever", "0", "00:00", "1-", "1:2:3:4", "-5", ""] {
            assert!(!slurm_time(t), "{t}");
        }
        for m in ["8G", "512", "4096M", "1T", "2048K"] {
            assert!(slurm_memory(m), "{m}");
        }
        for m in ["99999999999T", "0", "8X", "G", "-1G", "1.5G"] {
            assert!(!slurm_memory(m), "{m}");
        }
        let bad = |c: SlurmConfig| c.options().unwrap_err();
        assert!(
            bad(SlurmConfig {
                cpus: Some(0),
                ..SlurmConfig::default()
            })
            .contains("executor.slurm.cpus")
        );
        assert!(
            bad(SlurmConfig {
                time_limit: Some("forever".into()),
                ..SlurmConfig::default()
            })
            .contains("executor.slurm.time_limit: `forever`")
        );
        assert!(
            bad(SlurmConfig {
                memory: Some("99999999999T".into()),
                ..SlurmConfig::default()
            })
            .contains("executor.slurm.memory")
        );
    }

    #[test]
    fn a_kubernetes_job_needs_an_image_and_quantities_kubernetes_reads() {
        let mut k = KubernetesConfig::default();
        assert!(k.check().unwrap_err().contains("image"));
        k.image = "ghcr.io/acme/agent:1".into();
        k.cpu = Some("500m".into());
        k.memory = Some("4Gi".into());
        assert!(k.check().is_ok());
        k.memory = Some("4 GB".into());
        assert!(
            k.check()
                .unwrap_err()
                .contains("executor.kubernetes.memory")
        );
        k.memory = None;
        k.cpu = Some("two".into());
        assert!(k.check().is_err());
    }

    #[test]
    fn the_pull_policy_is_said_and_volumes_are_held_to_the_pod_security_standard() {
        let mut k = KubernetesConfig {
            image: "registry.example:5000/acme/agent:1".into(),
            ..Default::default()
        };
        assert_eq!(k.pull_policy(), PullPolicy::IfNotPresent);
        for latest in ["registry.example:5000/acme/agent", "acme/agent:latest"] {
            k.image = latest.into();
            assert_eq!(k.pull_policy(), PullPolicy::Always, "{latest}");
        }
        k.image = "acme/agent@sha256:0123".into();
        assert_eq!(k.pull_policy(), PullPolicy::IfNotPresent);
        k.image_pull_policy = Some(PullPolicy::Never);
        assert_eq!(k.pull_policy(), PullPolicy::Never);

        k.volumes = vec![serde_json::json!({"name": "host", "hostPath": {"path": "/"}})];
        let err = k.check().unwrap_err();
        assert!(
            err.contains("volumes[0]: `host` is a `hostPath` volume, which the `restricted` Pod Security Standard does not allow"),
            "{err}"
        );
        k.pod_security = PodSecurity::Baseline;
        assert!(k.check().unwrap_err().contains("`baseline`"));
        k.pod_security = PodSecurity::Privileged;
        assert!(k.check().is_ok());
        k.pod_security = PodSecurity::Restricted;
        k.volumes =
            vec![serde_json::json!({"name": "cache", "persistentVolumeClaim": {"claimName": "c"}})];
        assert!(k.check().is_ok());
        k.volume_mounts =
            vec![serde_json::json!({"name": "cache", "mountPath": "/var/run/agentloop"})];
        assert!(k.check().unwrap_err().contains("other than"));
    }

    #[test]
    fn slurm_options_are_plain_words() {
        let s = SlurmConfig {
            partition: Some("gpu".into()),
            time_limit: Some("1-02:00:00".into()),
            cpus: Some(4),
            memory: Some("8G".into()),
            account: None,
        };
        assert_eq!(
            s.options().unwrap(),
            [
                "--partition=gpu",
                "--time=1-02:00:00",
                "--cpus-per-task=4",
                "--mem=8G"
            ]
        );
        let bad = SlurmConfig {
            partition: Some("main --wrap=x".into()),
            ..Default::default()
        };
        assert!(
            bad.options()
                .unwrap_err()
                .contains("executor.slurm.partition")
        );
    }
}
