//! `[sandbox]`: whether agents (and checks) run confined, what they may write, read and
//! reach. The sandbox itself is `agentloop-exec`'s; this is what configures it.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Off,
    Workspace,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `off`, or `workspace`: each agent under bubblewrap, confined to its work tree.
    pub mode: Mode,
    /// More paths the agent may write (`~/` is the home directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// More paths the agent may not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Hosts the agent may reach (`host`, `host:port`, `*.domain`), besides its own
    /// model API's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// The verification commands run confined too (their working copy writable, no
    /// network).
    pub verify: bool,
    /// The bubblewrap program.
    pub bwrap: String,
}

impl SandboxConfig {
    pub fn on(&self) -> bool {
        self.mode == Mode::Workspace
    }
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            mode: Mode::Off,
            writable: Vec::new(),
            hidden: Vec::new(),
            allow_hosts: Vec::new(),
            verify: false,
            bwrap: "bwrap".into(),
        }
    }
}

/// The hosts a sandboxed agent may reach: `host` (any port), `host:port`, `*.domain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<(String, Option<u16>)>,
}

/// Whether `host` names this machine's loopback.
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Splits `host:port` (IPv6 in brackets); a bare host has no port.
pub fn split_host(entry: &str) -> Result<(String, Option<u16>), String> {
    let entry = entry.trim();
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{entry}`: an IPv6 address needs its closing `]`"))?;
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match entry.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_string(), Some(p)),
            _ => (entry.to_string(), None),
        }
    };
    if host.is_empty() || host.contains('/') || host.contains(char::is_whitespace) {
        return Err(format!("`{entry}` is not `host` or `host:port`"));
    }
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("`{entry}`: `{p}` is not a port"))?,
        ),
    };
    Ok((host.to_ascii_lowercase(), port))
}

impl AllowList {
    /// Reads entries; a loopback host must name its port (a loopback port is
    /// reachable only when it is listed).
    pub fn parse(entries: &[String]) -> Result<AllowList, String> {
        let mut out = Vec::new();
        for e in entries {
            let (host, port) = split_host(e)?;
            if port.is_none() && is_loopback(&host) {
                return Err(format!(
                    "`{e}`: name the port (`{host}:PORT`): a loopback port is reachable only when it is listed"
                ));
            }
            if !out.contains(&(host.clone(), port)) {
                out.push((host, port));
            }
        }
        Ok(AllowList { entries: out })
    }

    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let loopback = is_loopback(&host);
        self.entries.iter().any(|(h, p)| {
            let host_ok = if loopback {
                // 127.0.0.1, ::1 and localhost are one machine.
                is_loopback(h)
            } else if let Some(domain) = h.strip_prefix("*.") {
                host.ends_with(&format!(".{domain}"))
            } else {
                *h == host
            };
            host_ok && p.is_none_or(|p| p == port)
        })
    }

    /// The loopback ports listed: the bridge listens on each inside the sandbox, so
    /// a program that ignores proxy variables still reaches them.
    pub fn loopback_ports(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .entries
            .iter()
            .filter(|(h, _)| is_loopback(h))
            .filter_map(|(_, p)| *p)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
