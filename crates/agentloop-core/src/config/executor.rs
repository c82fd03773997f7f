//! `[executor]`: where agent iterations run. `local` (the default) runs each one as a
//! process on this machine; `slurm` submits each one as a job to an existing Slurm
//! cluster, which gets the task's branch from the run's git remote and pushes its
//! result back there.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::values::duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutorConfig {
    pub kind: ExecutorKind,
    /// The git remote jobs fetch a task's branch from and push results to: a remote's
    /// name in this repository, or a URL (a bare repository on a shared disk, a forge).
    pub remote: String,
    /// The `agentloop` program on the cluster's nodes (default: this one's path, which
    /// suits nodes that share this machine's disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// How often the state of a job is asked for.
    #[serde(with = "duration")]
    pub poll: Duration,
    pub slurm: SlurmConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    #[default]
    Local,
    Slurm,
}

/// What each iteration's Slurm job asks for (`sbatch` options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `--time`: minutes, or `[days-]hours:minutes:seconds` (default: the agent's
    /// timeout and ten minutes, not the partition's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// `--mem`: e.g. `4G`.
    #[serde(skip_serializing_if = "Option::is_none")]
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
        add("time", "time_limit", self.time_limit.clone())?;
        add("cpus-per-task", "cpus", self.cpus.map(|c| c.to_string()))?;
        add("mem", "memory", self.memory.clone())?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
