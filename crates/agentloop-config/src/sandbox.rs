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
    /// More paths the agent may write (`~/` is the home directory), and the confined
    /// checks too (a fixture directory a test suite shares); read-only to the
    /// held-out checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// More paths the agent may not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Hosts the agent may reach (`host`, `host:port`, `*.domain`), besides its own
    /// model API's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::bounds::allow_hosts")]
    pub allow_hosts: Vec<String>,
    /// Whether the checks run confined (their copy writable, nothing else of the home
    /// or the caches, a fresh home and `/tmp`, no network): `"auto"` wherever
    /// bubblewrap works (where it does not, the run says so and its verdict is
    /// MONITOR), `true` always (a run refuses to start where it cannot), `false` never
    /// (MONITOR). Whether the agents are confined (`mode`) does not change it.
    #[schemars(with = "ConfineRepr")]
    pub verify: ConfineChecks,
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
            verify: ConfineChecks::Auto,
            bwrap: "bwrap".into(),
        }
    }
}

/// `[sandbox] verify`: whether the judge's checks run confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(into = "ConfineRepr")]
pub enum ConfineChecks {
    /// Wherever bubblewrap works; unconfined (and said, and MONITOR) where not.
    #[default]
    Auto,
    /// Always: a run refuses to start where bubblewrap does not work.
    Always,
    /// Never (MONITOR).
    Never,
}

/// How `[sandbox] verify` is written: `"auto"`, `true` or `false`.
#[derive(Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum ConfineRepr {
    Bool(bool),
    Word(AutoWord),
}

#[derive(Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum AutoWord {
    Auto,
}

impl<'de> Deserialize<'de> for ConfineChecks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ConfineChecks, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ConfineChecks;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\", true or false")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ConfineChecks, E> {
                Ok(if v {
                    ConfineChecks::Always
                } else {
                    ConfineChecks::Never
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ConfineChecks, E> {
                match v {
                    "auto" => Ok(ConfineChecks::Auto),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl From<ConfineChecks> for ConfineRepr {
    fn from(c: ConfineChecks) -> ConfineRepr {
        match c {
            ConfineChecks::Always => ConfineRepr::Bool(true),
            ConfineChecks::Never => ConfineRepr::Bool(false),
            ConfineChecks::Auto => ConfineRepr::Word(AutoWord::Auto),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<SandboxConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn verify_is_auto_unless_written_true_or_false() {
        assert_eq!(read("").unwrap().verify, ConfineChecks::Auto);
        assert_eq!(
            read("verify = \"auto\"").unwrap().verify,
            ConfineChecks::Auto
        );
        assert_eq!(read("verify = true").unwrap().verify, ConfineChecks::Always);
        assert_eq!(read("verify = false").unwrap().verify, ConfineChecks::Never);
        let e = read("verify = \"yes\"").unwrap_err();
        assert!(e.contains("expected \"auto\", true or false"), "{e}");
        // Written back as it is read.
        for v in [
            ConfineChecks::Auto,
            ConfineChecks::Always,
            ConfineChecks::Never,
        ] {
            let c = SandboxConfig {
                verify: v,
                ..SandboxConfig::default()
            };
            let text = toml::to_string(&c).unwrap();
            assert_eq!(read(&text).unwrap().verify, v, "{text}");
        }
    }
}
