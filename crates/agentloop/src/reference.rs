//! Pages written from the program itself, so that none can drift from it: the command
//! line reference (from clap's definitions), the configuration reference (from the
//! configuration's JSON Schema, itself from its types), man pages and shell
//! completions. `docs/reference/` and `docs/agentloop.schema.json` hold what this
//! writes; a test fails when they are stale (`AGENTLOOP_BLESS=1` writes them again).

use std::fmt::Write as _;
use std::path::Path;

use clap::CommandFactory;
use serde_json::Value;

use crate::cli::Cli;

/// The command line as clap defines it.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Every generated page: its path under `docs/`, and its text.
pub fn pages() -> Vec<(&'static str, String)> {
    let schema = agentloop_config::json_schema();
    vec![
        ("reference/cli.md", cli_markdown(&command())),
        ("reference/config.md", config_markdown(&schema)),
        (
            "agentloop.schema.json",
            format!(
                "{}\n",
                serde_json::to_string_pretty(&schema).unwrap_or_default()
            ),
        ),
    ]
}

/// The command line reference: every command a person types, its usage, arguments and
/// examples.
pub fn cli_markdown(root: &clap::Command) -> String {
    let mut out = String::from(
        "# Command line reference\n\n\
         Written from agentloop's own argument definitions (`cargo test -p agentloop \
         reference` checks it is current; `AGENTLOOP_BLESS=1` writes it again). \
         `agentloop COMMAND --help` prints the same.\n\n",
    );
    let mut root = root.clone();
    root.build();
    let mut all = Vec::new();
    walk(&root, &mut Vec::new(), &mut all);
    out.push_str("| command | what it does |\n|---|---|\n");
    for (path, cmd) in &all {
        let name = path.join(" ");
        let _ = writeln!(
            out,
            "| [`{name}`](#{}) | {} |",
            anchor(&name),
            first_line(cmd)
        );
    }
    for (path, cmd) in &all {
        command_section(&mut out, &path.join(" "), cmd);
    }
    out
}

/// The visible commands under `cmd`, depth first, each with its words.
fn walk<'a>(
    cmd: &'a clap::Command,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, &'a clap::Command)>,
) {
    path.push(cmd.get_name().to_string());
    out.push((path.clone(), cmd));
    for sub in cmd.get_subcommands() {
        if !sub.is_hide_set() && sub.get_name() != "help" {
            walk(sub, path, out);
        }
    }
    path.pop();
}

fn anchor(name: &str) -> String {
    name.replace(' ', "-")
}

fn first_line(cmd: &clap::Command) -> String {
    cmd.get_about()
        .map(|a| a.to_string())
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .trim_end_matches('.')
        .replace('|', "\\|")
}

fn command_section(out: &mut String, name: &str, cmd: &clap::Command) {
    let _ = writeln!(out, "\n## {name}\n");
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    if !about.is_empty() {
        let _ = writeln!(out, "{}\n", about.trim());
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ");
    let _ = writeln!(out, "```text\n{usage}\n```");
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        out.push('\n');
        for a in args {
            let _ = writeln!(out, "- {}", arg_line(a));
        }
    }
    if let Some(after) = cmd.get_after_help() {
        let after = after.to_string();
        if !after.trim().is_empty() {
            let _ = writeln!(out, "\n```text\n{}\n```", after.trim_end());
        }
    }
}

fn arg_line(a: &clap::Arg) -> String {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| a.get_id().to_string().to_uppercase());
    let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let shown = if names.is_empty() {
        format!("`{value}`")
    } else if takes_value {
        format!("`{} {value}`", names.join(", "))
    } else {
        format!("`{}`", names.join(", "))
    };
    let mut line = shown;
    let help = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string().replace('\n', " "))
        .unwrap_or_default();
    if !help.is_empty() {
        let _ = write!(line, ": {}", help.trim());
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && takes_value {
        let _ = write!(line, " One of {}.", values.join(", "));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && takes_value {
        let _ = write!(line, " Default: `{}`.", defaults.join(" "));
    }
    line
}

/// The configuration reference: each section of `agentloop.toml`, each key with its
/// type, default and meaning, from the schema.
pub fn config_markdown(schema: &Value) -> String {
    let mut out = String::from(
        "# Configuration reference\n\n\
         Every key of `agentloop.toml`, written from the configuration's JSON Schema \
         ([`agentloop.schema.json`](../agentloop.schema.json), itself written from \
         agentloop's configuration types; `agentloop config schema` prints it). Every \
         key is optional. Values come from the built-in defaults, then \
         `$XDG_CONFIG_HOME/agentloop/config.toml`, then `agentloop.toml`, then the \
         plan's front matter, then flags; `agentloop config show` prints each \
         effective value and where it came from.\n",
    );
    let _ = writeln!(
        out,
        "\nThe schema holds the bounds and forms agentloop holds a value to (an editor \
         that reads it refuses what agentloop would), but for what JSON Schema cannot \
         say, which only agentloop checks: {}.",
        agentloop_config::SCHEMA_UNSAID
    );
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let Some(sections) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    for (name, section) in sections {
        let section = resolve(section, &defs);
        table(&mut out, name, &section, &defs, 0);
    }
    out
}

/// One table (`[name]`) and its keys; tables inside it follow as `[name.key]`.
fn table(out: &mut String, name: &str, section: &Value, defs: &Value, depth: usize) {
    let _ = writeln!(out, "\n## `[{name}]`");
    if let Some(d) = description(section) {
        let _ = writeln!(out, "\n{d}");
    }
    // A map of tables: `[agents.NAME]`.
    if let Some(each) = section
        .get("additionalProperties")
        .filter(|v| v.is_object())
    {
        let each = resolve(each, defs);
        if each.get("properties").is_some() && depth < 2 {
            let _ = writeln!(out, "\nOne table per name: `[{name}.NAME]`.");
            keys(out, &each, defs);
            nested(out, name, &each, defs, depth, "NAME");
            return;
        }
    }
    keys(out, section, defs);
    nested(out, name, section, defs, depth, "");
}

fn nested(out: &mut String, name: &str, section: &Value, defs: &Value, depth: usize, each: &str) {
    let Some(props) = section.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, v) in props {
        let v = resolve(v, defs);
        if is_table(&v) && depth < 2 {
            let full = if each.is_empty() {
                format!("{name}.{key}")
            } else {
                format!("{name}.{each}.{key}")
            };
            table(out, &full, &v, defs, depth + 1);
        }
    }
}

fn is_table(v: &Value) -> bool {
    v.get("properties").is_some()
        || v.get("additionalProperties")
            .is_some_and(|a| a.get("properties").is_some() || a.get("$ref").is_some())
}

fn keys(out: &mut String, section: &Value, defs: &Value) {
    let Some(props) = section.get("properties").and_then(Value::as_object) else {
        return;
    };
    let plain: Vec<_> = props
        .iter()
        .filter(|(_, v)| !is_table(&resolve(v, defs)))
        .collect();
    if plain.is_empty() {
        return;
    }
    out.push_str("\n| key | type | default | meaning |\n|---|---|---|---|\n");
    for (key, v) in plain {
        let r = resolve(v, defs);
        let default = v
            .get("default")
            .or(r.get("default"))
            .or_else(|| section.get("default").and_then(|d| d.get(key.as_str())))
            .filter(|d| !d.is_null())
            .map(|d| format!("`{}`", d.to_string().replace('|', "\\|")))
            .unwrap_or_default();
        let meaning = description(v)
            .or(description(&r))
            .unwrap_or_default()
            .replace('\n', " ")
            .replace('|', "\\|");
        let _ = writeln!(
            out,
            "| `{key}` | {} | {default} | {meaning} |",
            type_of(&r, defs).replace('|', "\\|")
        );
    }
}

fn description(v: &Value) -> Option<String> {
    v.get("description")
        .and_then(Value::as_str)
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
}

/// `v` with a `$ref` (or a one-element `allOf`, or an optional `anyOf` with null)
/// replaced by what it names.
fn resolve(v: &Value, defs: &Value) -> Value {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        let mut target = defs.get(name).cloned().unwrap_or(Value::Null);
        if let (Some(t), Some(d)) = (target.as_object_mut(), v.get("description")) {
            t.insert("description".into(), d.clone());
        }
        return target;
    }
    // A type and the rules beside it (`[agents]`: the agent's table, and a rule on
    // tables that name no kind).
    if let Some(first) = v
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|all| all.first())
        .filter(|f| f.get("$ref").is_some())
    {
        return resolve(first, defs);
    }
    if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
        let not_null: Vec<&Value> = any
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if not_null.len() == 1 && any.len() == 2 {
            let mut inner = resolve(not_null[0], defs);
            if let (Some(t), Some(d)) = (inner.as_object_mut(), v.get("description")) {
                t.insert("description".into(), d.clone());
            }
            return inner;
        }
    }
    v.clone()
}

/// A key's type in words: `string`, `integer`, `"a" \| "b"`, `list of string`…
fn type_of(v: &Value, defs: &Value) -> String {
    let v = resolve(v, defs);
    if let Some(values) = v.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if let Some(c) = v.get("const") {
        return format!("`{c}`");
    }
    if let Some(words) = string_form(&v) {
        return words.into();
    }
    for k in ["oneOf", "anyOf"] {
        // With a type of its own, the alternatives are forms of it (`run.cycle`).
        if v.get("type").is_some() {
            break;
        }
        if let Some(alts) = v.get(k).and_then(Value::as_array) {
            return alts
                .iter()
                .map(|a| type_of(a, defs))
                .filter(|t| t != "null")
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    let types: Vec<&str> = match v.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return "value".into();
    }
    types
        .iter()
        .map(|t| match *t {
            "array" => {
                let item = v
                    .get("items")
                    .map(|i| type_of(i, defs))
                    .unwrap_or_else(|| "value".into());
                format!("list of {item}")
            }
            "object" => match v.get("additionalProperties") {
                Some(a) if a.is_object() => format!("table of {}", type_of(a, defs)),
                _ => "table".into(),
            },
            "integer" | "number" => format!("{t}{}", bounds(&v)),
            t => t.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A string of a form the configuration names in words: a duration.
fn string_form(v: &Value) -> Option<&'static str> {
    let pattern = agentloop_ground::values::duration::PATTERN;
    if v.get("pattern").and_then(Value::as_str) == Some(pattern) {
        return Some("duration");
    }
    let all = v.get("allOf").and_then(Value::as_array)?;
    all.iter()
        .any(|a| a.get("pattern").and_then(Value::as_str) == Some(pattern))
        .then_some("duration, not 0")
}

/// A number's bounds in words: `, 1 to 64`, `, at least 1`, `, over 0`.
fn bounds(v: &Value) -> String {
    let n = |k: &str| v.get(k).and_then(Value::as_f64);
    match (n("minimum"), n("exclusiveMinimum"), n("maximum")) {
        (Some(lo), _, Some(hi)) => format!(", {lo} to {hi}"),
        (Some(lo), _, None) if lo > 0.0 => format!(", at least {lo}"),
        (_, Some(lo), None) => format!(", over {lo}"),
        (_, _, Some(hi)) => format!(", at most {hi}"),
        _ => String::new(),
    }
}

/// A man page per command (`agentloop.1`, `agentloop-run.1`, `agentloop-hook-install.1`…)
/// written into `dir`; the names of the files written.
pub fn write_man_pages(dir: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut root = command();
    root.build();
    let mut all = Vec::new();
    walk(&root, &mut Vec::new(), &mut all);
    let mut written = Vec::new();
    for (path, cmd) in all {
        let name = path.join("-");
        let cmd = cmd.clone().name(name.clone()).bin_name(path.join(" "));
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        let file = format!("{name}.1");
        std::fs::write(dir.join(&file), page)?;
        written.push(file);
    }
    Ok(written)
}

/// The completion script for `shell`, on `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut command(), "agentloop", out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/reference/` and the schema are what the program writes today.
    #[test]
    fn the_generated_pages_are_current() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let bless = std::env::var_os("AGENTLOOP_BLESS").is_some();
        let mut stale = Vec::new();
        for (path, text) in pages() {
            let file = docs.join(path);
            if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                if bless {
                    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                    std::fs::write(&file, text).unwrap();
                } else {
                    stale.push(path);
                }
            }
        }
        assert!(
            stale.is_empty(),
            "docs/{stale:?} differ from what the program writes: run `AGENTLOOP_BLESS=1 cargo test -p agentloop reference` and commit them"
        );
    }

    /// Every command a person types says what it is for and shows an example.
    #[test]
    fn every_command_has_help_and_an_example() {
        let mut root = command();
        root.build();
        let mut all = Vec::new();
        walk(&root, &mut Vec::new(), &mut all);
        let mut missing = Vec::new();
        for (path, cmd) in &all {
            let has_about = cmd.get_about().is_some();
            let has_example = cmd
                .get_after_help()
                .is_some_and(|h| h.to_string().contains("Example"));
            // A group too (`plan`, `queue`): its examples say what it is for.
            if !has_about || !has_example {
                missing.push(path.join(" "));
            }
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if !a.is_hide_set() && !matches!(id, "help" | "version") && a.get_help().is_none() {
                    missing.push(format!("{} {id}", path.join(" ")));
                }
            }
        }
        assert!(missing.is_empty(), "no help or no example: {missing:?}");
    }

    /// The schema holds every section and refuses what the configuration refuses.
    #[test]
    fn the_schema_names_every_section_and_no_other() {
        let schema = agentloop_config::json_schema();
        let props = schema["properties"].as_object().unwrap();
        for section in [
            "run", "budgets", "verify", "gates", "agents", "sandbox", "store", "review",
        ] {
            assert!(props.contains_key(section), "{section}");
        }
        assert_eq!(schema["additionalProperties"], Value::Bool(false));
    }
}
