//! What the JSON Schema says beyond the types: the bounds and forms `layers::check`
//! holds a configuration to, where JSON Schema can say them, so that an editor
//! refuses what agentloop would (the corpus in `crates/agentloop/tests/configs/` holds the two to
//! each other). Each is beside the key it bounds, as an attribute, unless it spans
//! keys (a command agent needs a command) — those are here.
//!
//! What JSON Schema cannot say is [`UNSAID`], and only agentloop checks it.

use schemars::{Schema, SchemaGenerator, json_schema};

use agentloop_ground::values::duration;

/// What agentloop checks and JSON Schema cannot say, in the configuration reference.
/// The volume types the `restricted` standard allows.
pub(crate) const RESTRICTED_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The suffixes of a Kubernetes quantity (`500m`, `4Gi`).
pub(crate) const QUANTITY_SUFFIXES: [&str; 13] = [
    "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
];

pub const UNSAID: &str = "a whole number written as a float (`5.0`: JSON has one kind \
of number), a duration's range (`store.timeout` from 1s to 1h, a `run.cycle` of at least \
1s), that `notify.webhook_ca` is a file, that Kubernetes volumes' names differ and each \
mount names one of them, and a Slurm memory size below 1M or above 1024T";

/// A value that is not only white space (`remote`, a VALIDATE step's command).
pub const NOT_BLANK: &str = r"\S";

/// `[run] cycle`: a number of tasks (`"10 tasks"`, at least 1) or a duration.
pub fn cycle(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "anyOf": [
            { "pattern": r"^\s*0*[1-9][0-9]*\s+tasks?\s*$" },
            { "allOf": [{ "pattern": duration::PATTERN }, { "pattern": "[1-9]" }] },
        ],
    })
}

/// A port, 1 to 65535 (leading zeros read as Rust reads a `u16`).
const PORT: &str =
    r"\+?0*(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})";

/// `[sandbox] allow_hosts`: `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6
/// address, `*.domain`; a loopback host names its port.
pub fn allow_hosts(_: &mut SchemaGenerator) -> Schema {
    let bracketed = format!(r"\[[^\]\s/]+\](:{PORT})?");
    let host = format!(r"[^\s/\[:][^\s/:]*(:{PORT})?");
    let bare_v6 = r"[^\s/\[][^\s/]*:[^\s/]*:[^\s/]*";
    let entry = format!(r"^\s*({bracketed}|{host}|{bare_v6})\s*$");
    let loopback_alone = r"^\s*(\[?::1\]?|[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})\s*$";
    json_schema!({
        "type": "array",
        "items": {
            "type": "string",
            "pattern": entry,
            "not": { "pattern": loopback_alone },
        },
    })
}

/// `[executor.slurm] time_limit`: minutes, `[days-]hours:minutes:seconds` and the
/// forms between, or `UNLIMITED`; not zero.
pub fn slurm_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "anyOf": [
            { "pattern": "^([Uu][Nn][Ll][Ii][Mm][Ii][Tt][Ee][Dd]|[Ii][Nn][Ff][Ii][Nn][Ii][Tt][Ee])$" },
            { "allOf": [
                { "pattern": "^([0-9]{1,9}-)?[0-9]{1,9}(:[0-9]{1,9}){0,2}$" },
                { "pattern": "[1-9]" },
            ] },
        ],
    })
}

/// A Slurm option's value: one plain word.
pub const SLURM_WORD: &str = r"^[A-Za-z0-9_.:+][A-Za-z0-9_.:+-]*$";
/// `[executor.slurm] memory`: a whole number of megabytes, or with K, M, G or T.
pub const SLURM_MEMORY: &str = r"^0*[1-9][0-9]*[KMGTkmgt]?$";

/// `[executor]`: with `kind = "kubernetes"`, the Job's settings are checked — an
/// image, quantities Kubernetes reads, no root user, and volumes and mounts the Pod
/// Security Standard admits.
pub fn executor(schema: &mut Schema) {
    let quantity = format!(
        r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)({})?$",
        QUANTITY_SUFFIXES.join("|")
    );
    let restricted: Vec<&str> = std::iter::once("name").chain(RESTRICTED_VOLUMES).collect();
    let names = |kinds: serde_json::Value| serde_json::json!({ "properties": { "volumes": { "items": { "propertyNames": kinds } } } });
    let security = |standard: &str| serde_json::json!({ "required": ["pod_security"], "properties": { "pod_security": { "const": standard } } });
    let kubernetes = serde_json::json!({
        "required": ["image"],
        "properties": {
            "image": { "pattern": r"^\S+$" },
            "cpu": { "pattern": quantity },
            "memory": { "pattern": quantity },
            "run_as_user": { "minimum": 1 },
            "volumes": { "items": {
                "required": ["name"],
                "properties": { "name": {
                    "type": "string",
                    "minLength": 1,
                    "not": { "enum": [crate::SCRATCH_VOLUME, crate::SPEC_VOLUME] },
                } },
            } },
            "volume_mounts": { "items": {
                "required": ["name", "mountPath"],
                "properties": { "mountPath": {
                    "type": "string",
                    "pattern": "^/",
                    "not": { "pattern": format!("^({}|{})/*$", crate::SCRATCH_PATH, crate::SPEC_MOUNT) },
                } },
            } },
        },
        "allOf": [
            // `restricted` is the default.
            { "if": { "not": { "required": ["pod_security"] } }, "then": names(serde_json::json!({ "enum": restricted })) },
            { "if": security("restricted"), "then": names(serde_json::json!({ "enum": restricted })) },
            { "if": security("baseline"), "then": names(serde_json::json!({ "not": { "const": "hostPath" } })) },
        ],
    });
    schema.insert(
        "if".into(),
        serde_json::json!({ "required": ["kind"], "properties": { "kind": { "const": "kubernetes" } } }),
    );
    schema.insert(
        "then".into(),
        serde_json::json!({ "required": ["kubernetes"], "properties": { "kubernetes": kubernetes } }),
    );
}

/// `[agents]`: each table an agent. A table under a name no CLI has and with no
/// `kind` is a command agent, which needs its command; a built-in name's table
/// changes only what it sets.
pub fn agents(generator: &mut SchemaGenerator) -> Schema {
    let agent = generator.subschema_for::<crate::AgentConfig>();
    let builtin: serde_json::Map<String, serde_json::Value> = crate::BUILTIN_AGENTS
        .iter()
        .map(|name| (name.to_string(), agent.clone().to_value()))
        .collect();
    json_schema!({
        "type": "object",
        "properties": builtin,
        "additionalProperties": {
            "allOf": [
                agent,
                {
                    "if": { "not": { "required": ["kind"] } },
                    "then": { "required": ["command"], "properties": { "command": { "minItems": 1 } } },
                },
            ],
        },
    })
}

/// An agent's table: a `command` agent needs its program, and `prompt = "file"` needs
/// `{prompt_file}` in the command.
pub fn agent(schema: &mut Schema) {
    let rules = serde_json::json!([
        {
            "if": { "required": ["kind"], "properties": { "kind": { "const": "command" } } },
            "then": { "required": ["command"], "properties": { "command": { "minItems": 1 } } },
        },
        {
            "if": { "required": ["prompt"], "properties": { "prompt": { "const": "file" } } },
            "then": {
                "required": ["command"],
                "properties": { "command": { "contains": { "type": "string", "pattern": r"\{prompt_file\}" } } },
            },
        },
    ]);
    schema.insert("allOf".into(), rules);
}

/// `[validate]`: a minimum coverage needs the coverage step it is the minimum of.
pub fn validate(schema: &mut Schema) {
    schema.insert(
        "dependentRequired".into(),
        serde_json::json!({ "coverage_min": ["coverage"] }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The duration pattern accepts what humantime reads and refuses what it does not
    /// (but a number too large, which only reading it finds).
    #[test]
    fn the_duration_pattern_is_what_humantime_reads() {
        let pattern = regex::Regex::new(duration::PATTERN).unwrap();
        let numbers = [
            "0", "1", "90", "1.5", "0.25", "1 0", "1.", ".5", "", "1e3", "-1",
        ];
        let units = [
            "s", "sec", "seconds", "m", "min", "h", "hr", "hours", "d", "w", "M", "y", "ms", "us",
            "µs", "ns", "", "x", "hx", "S", "secx",
        ];
        let mut tried = 0;
        for n in numbers {
            for u in units {
                for gap in ["", " "] {
                    for rest in ["", " 30m", "30m", " 5", "!", " "] {
                        let s = format!("{n}{gap}{u}{rest}");
                        let read = humantime::parse_duration(&s);
                        let overflow =
                            matches!(read, Err(humantime::DurationError::NumberOverflow));
                        assert!(
                            overflow || pattern.is_match(&s) == read.is_ok(),
                            "{s:?}: the pattern says {}, humantime {read:?}",
                            pattern.is_match(&s)
                        );
                        tried += 1;
                    }
                }
            }
        }
        assert!(tried > 2000);
    }

    #[test]
    fn a_nonzero_duration_has_a_digit_other_than_zero() {
        let digit = regex::Regex::new("[1-9]").unwrap();
        for s in ["0", "0s", "00m", "0.0h", "0s 0ms"] {
            assert!(humantime::parse_duration(s).unwrap().is_zero() && !digit.is_match(s));
        }
        for s in ["10s", "0.5s", "1ns", "0s 1ms"] {
            assert!(!humantime::parse_duration(s).unwrap().is_zero() && digit.is_match(s));
        }
    }
}
