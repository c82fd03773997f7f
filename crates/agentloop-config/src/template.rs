//! The `agentloop.toml` files `agentloop init` writes: a short one (the agent, the
//! checks, the budgets) and, with `--full`, one with every section, commented.

/// Where the files `init` writes find the configuration's JSON Schema (written there
/// by `init`, or by `agentloop config schema`), relative to agentloop.toml.
pub const SCHEMA_PATH: &str = ".agentloop/agentloop.schema.json";

/// The short `agentloop.toml` written by `agentloop init`.
pub const SHORT_TEMPLATE: &str = r#"#:schema ./.agentloop/agentloop.schema.json
# agentloop configuration: the agent, the checks, the budgets. Every key is optional;
# `agentloop init --full` writes one with every section, `agentloop config show` prints
# each effective value and where it came from (docs/reference/config.md says them all).

[run]
agent = "claude"        # or codex, gemini, opencode, aider, copilot, qwen, droid, cline, or your own [agents.NAME]
# workers = 4           # agents at once, each task in its own git worktree

[verify]
# Run after every task's own `Verify:` commands, as regression checks: a test that
# passed when the run started must still pass; tests failing today do not block.
commands = []

[budgets]
max_iterations = 50     # for the whole run
task_retries = 5        # per task
max_cost_usd = 25.0     # dollars; over $100 needs `--force`
# max_duration = "4h"
"#;

/// The commented `agentloop.toml` with every section, written by `agentloop init --full`.
pub const TEMPLATE: &str = r#"#:schema ./.agentloop/agentloop.schema.json
# agentloop configuration. Every key is optional; `agentloop config show` prints the
# effective value of each and where it came from.

[run]
# Agent for tasks that name none: a name from [agents.*] below, or a built-in one.
agent = "claude"
# quick | tdd (the diff must touch tests) | pair (gate after every task) | checkpoint (gate after milestones)
# | swarm (quick, with 4 workers unless `workers` says otherwise)
mode = "quick"
# Agents at work at once. 1: in this working tree. More: each task in its own git
# worktree (in ~/.cache/agentloop/worktrees/), merged onto the run's integration branch
# only after its checks pass on the merged result; your branch and tree are not touched.
# workers = 4
isolate = false             # one worker, but in a worktree as above
keep_worktrees = false      # keep merged tasks' worktrees for inspection
branch = "agentloop/{run}"  # the integration branch of a run with workers
land = "none"               # or "ff": fast-forward your branch to it when the run completes
# fallback_agent = "codex"
# The gates a run adds, from how clear the plan is (`agentloop plan check` scores it):
# "auto" (8-10: none; 5-7: plan approval, its review, after each task, a final review;
# under 5: the same, its open questions shown at plan approval), "tool", "colleague".
shape = "auto"
confirm = true              # false (or `run --yes`): none of the gates that only confirm
workflow = "auto"           # library | bug | refactor | feature, by default from the plan

[budgets]
max_iterations = 50     # for the whole run
task_retries = 5        # per task, before the escalation ladder moves up
max_replans = 2
max_cost_usd = 25.0     # dollars; the default. Over $100 needs `--force`
# max_tokens = 5000000
# max_duration = "4h"

[breakers]
same_failure = 3        # the same failure fingerprint this many times in a row
no_change = 3           # no change in the working tree this many iterations in a row
no_output = 2           # the agent exits with no output this many times in a row
oscillation = 2         # the tree returns to a state it was already in this many times
debug_after = 2         # after the same failure this many times: one DEBUG iteration (0: never)
thrashing = 5           # one file edited this many times in an iteration that did not pass

[verify]
# Run after every task's own `Verify:` commands. They are regression checks: every
# test that passed when the run started must still pass, read test by test from the
# runner's own report (pytest, cargo nextest/test, go test, jest, vitest, mocha, maven,
# gradle, rspec, or JUnit XML written to $AGENTLOOP_TEST_REPORT); tests failing then
# may go on failing until a task names them in its `Tests:` line.
commands = []
regression = "per-test"  # or "exit-code": each command must exit 0, all or nothing
# flaky = ["tests/test_net.py::*"]  # tests whose failures are forgiven
# holdout = "~/holdout/myproject"    # held-out checks (`Holdout: NAME` → NAME.sh), outside the project
timeout = "10m"
# jobs = 4   # workers one check's runner may use (pytest-xdist, go -p, jest); unset: the cores
max_file_size = 104857600  # bytes: a larger file the work adds or changes fails its check (0: no limit)
# After the last task every check runs again on the whole project; a failure reopens work.
validate = true
validate_fixes = 2
# The verification surface (tests, the files a Verify runs, CI config, PLAN.md, this
# file) is recorded when a run starts. A change to it: "gate" (a person approves or
# rejects), "restore" (agentloop puts the baseline back), or "allow".
on_protected_change = "gate"
# protected = ["fixtures/"]      # more paths that belong to it
# check_files = ["noxfile.py"]   # more files that configure the checks, even when new
clean_copy = true       # verify on a clean copy of the agent's result
# carry = ["node_modules"]       # ignored directories the clean copy links as they are

[gates]
# On when the shape or the workflow asks for them (a colleague-shaped plan: all four).
plan_approval = false   # Gate 1: approve the plan
plan_review = false     # Gate 2: accept what agentloop found reading it (only if it found something)
after_each = false      # review each task once verified
final_review = false    # Gate 3: review the finished work before the run completes

# An independent reviewer of each verified task: another agent, read-only, that sees
# the task, its criteria, the diff and the checks' evidence (never the worker's words)
# and answers APPROVE or REJECT with findings the worker must address.
[review]
# agent = "codex"        # a different CLI or model than the worker; unset: no review
# second = "gemini"      # a second reviewer for high-risk work (what the diff gates flag)
when = "risk"           # "always", "risk" (flagged or larger than a small change), "never"
max_rounds = 2          # rejections before the task waits for a person

[git]
commit = false          # commit after each verified task

[hook]
claim_window = "10m"    # hook mode: a `hook start` run waits this long to be claimed by a session

[limits]
wait = "60s"            # after a usage/rate limit with no reset time; doubles each time in a row
overloaded_wait = "15s" # after an overloaded service; doubles each time in a row
max_wait = "6h"         # a longer wait waits for a person instead
on_limit = "wait"       # or "fallback": hand the task to run.fallback_agent

[notify]
# webhook = "https://hooks.example.com/agentloop" # a JSON POST per notification
# webhook_ca = "ca.pem"                         # trust this CA instead of the public roots
# command = ["my-notifier"]                     # the JSON on stdin
desktop = false                                 # notify-send, where it exists

[sandbox]
mode = "off"            # "workspace": each agent under bubblewrap, confined to its work tree
# allow_hosts = ["pypi.org", "*.npmjs.org:443"] # besides the agent's own model API
# hidden = ["~/work/secret-repo"]               # more paths the agent may not read
# writable = ["~/.cargo/registry"]              # more paths it may write
verify = "auto"         # the checks confined wherever bubblewrap works; true: always; false: never (MONITOR)

[executor]
kind = "local"          # "slurm": a Slurm batch job per iteration; "kubernetes": a Job (docs/EXECUTORS.md)
remote = "origin"       # the git remote jobs clone from and push to
# [executor.slurm]
# partition = "agents"
# time_limit = "2:00:00"
# cpus = 2
# memory = "4G"
# [executor.kubernetes]
# image = "registry.example.com/agentloop-claude:1"
# namespace = "agents"
# cpu = "2"
# memory = "4Gi"

# The journal in PostgreSQL, for a driver and dashboards on several machines
# (docs/EXECUTORS.md); AGENTLOOP_STORE_URL in the environment wins.
# [store]
# url = "postgres://agentloop@db.example:5432/agentloop"
# timeout = "45s"   # a store that does not answer by then is taken for down (exit 7)

# Any program can be an agent: it gets the prompt on stdin, or in a file.
# [agents.mine]
# kind = "command"
# command = ["./my-agent", "--prompt", "{prompt_file}"]
# prompt = "file"
# timeout = "30m"
"#;

/// The file `agentloop init --full` writes: [`TEMPLATE`], then every section it does
/// not hold, written from the configuration's JSON Schema (its keys commented out, at
/// their defaults, each with the first sentence of what it means): every section is
/// there, whatever is added to the configuration later.
pub fn full_template() -> String {
    let schema = crate::json_schema();
    let mut out = TEMPLATE.to_string();
    let Some(props) = schema["properties"].as_object() else {
        return out;
    };
    let has = |name: &str| {
        TEMPLATE.contains(&format!("\n[{name}]")) || TEMPLATE.contains(&format!("\n# [{name}]"))
    };
    let mut names: Vec<&String> = props.keys().collect();
    names.sort();
    for name in names {
        let prop = &props[name];
        // A table of named entries (`[agents.NAME]`, `[prices.MODEL]`).
        if let Some(entry) = prop.get("additionalProperties").filter(|v| v.is_object()) {
            let example = format!("{name}.NAME");
            if !has(name) && !TEMPLATE.contains(&format!("# [{name}.")) {
                section(
                    &mut out,
                    &schema,
                    &example,
                    prop,
                    resolve(&schema, entry),
                    None,
                );
            }
            continue;
        }
        let node = resolve(&schema, prop);
        // Sub-tables (`[gates.security]`): each its own section.
        let subs: Vec<(&String, &serde_json::Value)> = node["properties"]
            .as_object()
            .map(|o| o.iter().filter(|(_, v)| is_table(&schema, v)).collect())
            .unwrap_or_default();
        if !has(name) {
            section(&mut out, &schema, name, prop, node, Some(&prop["default"]));
        }
        for (sub, v) in subs {
            let full = format!("{name}.{sub}");
            if !has(&full) {
                let default = &prop["default"][sub.as_str()];
                section(
                    &mut out,
                    &schema,
                    &full,
                    v,
                    resolve(&schema, v),
                    Some(default),
                );
            }
        }
    }
    out
}

/// A key whose value is a table of its own (`[gates.security]`), not a value.
fn is_table(schema: &serde_json::Value, v: &serde_json::Value) -> bool {
    resolve(schema, v)["properties"].is_object()
}

/// A schema node with its `$ref` (or the `$ref` of an `anyOf` with null) followed.
fn resolve<'a>(
    schema: &'a serde_json::Value,
    node: &'a serde_json::Value,
) -> &'a serde_json::Value {
    let reference = node["$ref"].as_str().or_else(|| {
        node["anyOf"]
            .as_array()
            .and_then(|a| a.iter().find_map(|v| v["$ref"].as_str()))
    });
    match reference.and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(d) => &schema["$defs"][d],
        None => node,
    }
}

/// One commented section: its header, what it is, and each plain key at its default.
fn section(
    out: &mut String,
    schema: &serde_json::Value,
    name: &str,
    prop: &serde_json::Value,
    node: &serde_json::Value,
    defaults: Option<&serde_json::Value>,
) {
    out.push('\n');
    for d in [prop, node] {
        if let Some(text) = d["description"].as_str() {
            out.push_str(&format!("# {}\n", first_sentence(text)));
            break;
        }
    }
    out.push_str(&format!("# [{name}]\n"));
    let Some(keys) = node["properties"].as_object() else {
        return;
    };
    let mut keys: Vec<(&String, &serde_json::Value)> = keys.iter().collect();
    keys.sort_by_key(|(k, _)| k.as_str());
    for (key, v) in keys {
        if is_table(schema, v) {
            continue;
        }
        let value = v
            .get("default")
            .or_else(|| defaults.and_then(|d| d.get(key.as_str())))
            .filter(|d| !d.is_null())
            .map(toml_value)
            .unwrap_or_else(|| "…".into());
        let about = v["description"]
            .as_str()
            .map(first_sentence)
            .unwrap_or_default();
        out.push_str(&format!("# {key} = {value}"));
        if !about.is_empty() {
            out.push_str(&format!("  # {about}"));
        }
        out.push('\n');
    }
}

/// A default as TOML writes it (JSON's strings, numbers, booleans and arrays are
/// TOML's too; a table inline).
fn toml_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(o) => {
            let inner: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_value(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
        serde_json::Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(toml_value).collect();
            format!("[{}]", inner.join(", "))
        }
        other => other.to_string(),
    }
}

/// The first sentence of a description, on one line.
fn first_sentence(text: &str) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.find(". ") {
        Some(i) => one[..=i].to_string(),
        None => one,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Loader, Source};
    use crate::schema::Config;

    #[test]
    fn templates_are_valid_and_say_the_defaults() {
        for template in [full_template().as_str(), SHORT_TEMPLATE] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("agentloop.toml");
            std::fs::write(&p, template).unwrap();
            let l = Loader::new()
                .toml_file(Source::Project(p.clone()), &p)
                .unwrap()
                .build()
                .unwrap();
            assert_eq!(l.config, Config::default());
            assert!(template.contains("\ncommands = []\n"));
        }
        assert!(
            SHORT_TEMPLATE.lines().count() <= 20,
            "the short file stays short"
        );
    }

    /// Every section of the configuration is in the full file, sub-tables too.
    #[test]
    fn the_full_file_has_every_section() {
        let full = full_template();
        let schema = crate::json_schema();
        for (name, prop) in schema["properties"].as_object().unwrap() {
            assert!(
                full.contains(&format!("[{name}]")) || full.contains(&format!("[{name}.")),
                "[{name}] is missing"
            );
            // A table of named entries (`[agents.NAME]`) has one example entry.
            if prop["additionalProperties"].is_object() {
                continue;
            }
            let node = resolve(&schema, prop);
            for (sub, v) in node["properties"].as_object().into_iter().flatten() {
                if is_table(&schema, v) {
                    assert!(full.contains(&format!("[{name}.{sub}]")), "[{name}.{sub}]");
                }
            }
        }
    }
}
