//! The manual's claims against the program: every `agentloop …` command line the
//! README and the manual show (in code blocks and inline code) is parsed by the
//! program's own command line — its subcommands, flags and values exist as written;
//! every `[section] key` they name is a key of the configuration's schema; every exit
//! code they give is one of the program's. The reference pages themselves are written
//! by the program (`reference::the_generated_pages_are_current`). Every relative link
//! they have names a file that is there.

use std::path::{Path, PathBuf};

fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The text of each inline code span and each line of each fenced code block, and
/// whether it may be a command a person types (inline, or a shell block: not a
/// prompt's or a file's text).
fn code(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None;
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(
                    info.trim(),
                    "" | "sh" | "bash" | "console" | "shell" | "text"
                )),
            };
            continue;
        }
        if let Some(shell) = fence {
            out.push((line.trim().to_string(), shell));
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            out.push((inside.to_string(), true));
        }
    }
    out
}

/// Words as a shell splits them (quotes kept together), up to the end of the
/// command: a pipe, `&&`, a redirection or a comment.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    let end = out
        .iter()
        .position(|w| {
            ["|", "||", "&&", ";", "#", ">", ">>", "2>&1", "<", "&"].contains(&w.as_str())
                || w.starts_with('#')
                || w.starts_with('>')
        })
        .unwrap_or(out.len());
    out.truncate(end);
    out
}

/// The command lines among the code: each command of a line (`a && b`) that is
/// `agentloop …`, without the comment an example ends with (after two spaces); what
/// stands for "and so on" (`…`, `[OPTIONS]`) is not checked, and a word of
/// alternatives (`bash|zsh`) is each of them in turn.
fn command_lines(code: &[(String, bool)]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (c, shell) in code {
        if !shell {
            continue;
        }
        let c = c.trim_start_matches("$ ").trim();
        for command in c
            .split(" && ")
            .flat_map(|c| c.split(" || "))
            .flat_map(|c| c.split("; "))
        {
            let command = command.split(" | ").next().unwrap_or("").trim();
            let command = command.split("  ").next().unwrap_or("").trim();
            if !command.starts_with("agentloop ")
                || command.contains('…')
                || command.contains("...")
                || command.contains('[')
            {
                continue;
            }
            let w = words(command);
            // `a|b|c`: each alternative.
            match w.iter().position(|w| w.contains('|')) {
                Some(i) => {
                    for alt in w[i].split('|') {
                        let mut v = w.clone();
                        v[i] = alt.to_string();
                        out.push(v);
                    }
                }
                None => out.push(w),
            }
        }
    }
    out.retain(|w| w.len() > 1 && w[0] == "agentloop");
    out
}

/// A word that stands for a value the reader picks (`GATE`, `<SHELL>`, `RUN`).
fn placeholder(w: &str) -> bool {
    (w.starts_with('<') && w.ends_with('>'))
        || (w.len() > 1
            && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && w.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-'))
}

/// The program's commands that are not a person's (clap does not read them: `main`
/// takes them first), as the program names them.
fn internal() -> Vec<String> {
    vec![
        agentloop_exec::keeper::KEEP_ARG.to_string(),
        agentloop_resident::RESIDENT_ARG.to_string(),
        "sandbox-net".into(),
        "job".into(),
    ]
}

#[test]
fn every_command_line_the_manual_shows_is_one_the_program_reads() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for line in command_lines(&code(&text)) {
            checked += 1;
            if internal().contains(&line[1]) {
                continue;
            }
            let Err(e) = agentloop::reference::command().try_get_matches_from(&line) else {
                continue;
            };
            use clap::error::ErrorKind as K;
            use clap::error::{ContextKind, ContextValue};
            // A placeholder where a value or a command goes.
            let offending = [ContextKind::InvalidValue, ContextKind::InvalidSubcommand]
                .into_iter()
                .find_map(|k| match e.get(k) {
                    Some(ContextValue::String(v)) => Some(v.clone()),
                    _ => None,
                });
            if matches!(e.kind(), K::InvalidValue | K::InvalidSubcommand)
                && offending.as_deref().is_some_and(placeholder)
            {
                continue;
            }
            // A mention of a command without the arguments it needs, or of its help,
            // is a name, not an invocation.
            if matches!(
                e.kind(),
                K::MissingRequiredArgument
                    | K::DisplayHelp
                    | K::DisplayVersion
                    | K::DisplayHelpOnMissingArgumentOrSubcommand
                    | K::MissingSubcommand
            ) {
                continue;
            }
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            wrong.push(format!(
                "{}: `{}`: {first}",
                page.file_name().unwrap().to_string_lossy(),
                line.join(" ")
            ));
        }
    }
    assert!(checked > 150, "only {checked} command lines found");
    assert!(
        wrong.is_empty(),
        "{} of {checked} command lines the manual shows are not the program's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The keys of the table at `path` (`["gates", "security"]`) in the schema, if it is
/// one: a `NAME` entry of a map (`[agents.NAME]`, `[agents.claude]`) is the map's.
fn table<'a>(
    schema: &'a serde_json::Value,
    path: &[&str],
) -> Option<&'a serde_json::Map<String, serde_json::Value>> {
    let defs = &schema["$defs"];
    let resolve = |v: &'a serde_json::Value| -> &'a serde_json::Value {
        // A type and the rules beside it: the type.
        let v = v["allOf"]
            .get(0)
            .filter(|first| first["$ref"].is_string())
            .unwrap_or(v);
        match v["$ref"].as_str() {
            Some(r) => &defs[r.rsplit('/').next().unwrap()],
            None => v,
        }
    };
    let mut node = schema;
    for part in path {
        node = match node["properties"].get(*part) {
            Some(v) => resolve(v),
            None if node["additionalProperties"].is_object() => {
                resolve(&node["additionalProperties"])
            }
            None => return None,
        };
        // A map of tables: the next part is an entry's name.
        if node["properties"].is_null() && node["additionalProperties"].is_object() {
            let entry = resolve(&node["additionalProperties"]);
            if entry["properties"].is_object() {
                node = &node["additionalProperties"];
            }
        }
    }
    resolve(node)["properties"].as_object()
}

/// Tables the manual shows of other programs' configuration: (page, the table, whose).
const FOREIGN: &[(&str, &str, &str)] = &[
    ("first-run.md", "[testenv]", "tox.ini"),
    ("ARCHITECTURE.md", "[testenv]", "tox.ini"),
    ("PERFORMANCE.md", "[profile.", "Cargo.toml"),
    ("SECURITY.md", "[lib]", "Cargo.toml"),
    (
        "SECURITY.md",
        "[tool.pytest.ini_options]",
        "pyproject.toml's pytest section",
    ),
    ("SECURITY.md", "[pytest]", "tox.ini's pytest section"),
    ("agents/index.md", "[features]", "Codex's config.toml"),
    ("agents/index.md", "[mcp_servers.", "Codex's config.toml"),
    ("EVIDENCE.md", "[store] dir", "nextest's tool configuration"),
    (
        "EVIDENCE.md",
        "[tool.pytest]",
        "pyproject.toml's pytest section",
    ),
    ("EVIDENCE.md", "[pytest]", "pytest.ini's pytest section"),
];

/// Whether the table at `path` is a map of plain values (`[agents.NAME.env]`).
fn values(schema: &serde_json::Value, path: &[&str]) -> bool {
    let (last, parent) = path.split_last().unwrap();
    table(schema, parent)
        .and_then(|keys| keys.get(*last))
        .is_some_and(|v| v["additionalProperties"].is_object() || v["type"] == "object")
}

#[test]
fn every_configuration_key_the_manual_names_is_the_programs() {
    let schema = agentloop_config::json_schema();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (c, _) in code(&text) {
            // `[section] key`, `[section.sub] key = value`, or a whole `[section]`.
            let Some(rest) = c.strip_prefix('[') else {
                continue;
            };
            if FOREIGN
                .iter()
                .any(|(file, what, _)| page.ends_with(file) && c.starts_with(what))
            {
                continue;
            }
            let Some((section, after)) = rest.split_once(']') else {
                continue;
            };
            if section.is_empty()
                || !section
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_' || ch == '.')
                || section.starts_with('.')
            {
                continue;
            }
            let path: Vec<&str> = section.split('.').collect();
            let Some(keys) = table(&schema, &path) else {
                if values(&schema, &path) {
                    checked += 1;
                    continue;
                }
                wrong.push(format!(
                    "{}: `[{section}]` is no table",
                    page.file_name().unwrap().to_string_lossy()
                ));
                continue;
            };
            checked += 1;
            let key = after
                .trim()
                .split(|ch: char| ch.is_whitespace() || ch == '=')
                .next()
                .unwrap_or("");
            if key.is_empty() || !key.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_') {
                continue;
            }
            if !keys.contains_key(key) {
                wrong.push(format!(
                    "{}: `[{section}] {key}`: no such key",
                    page.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} keys found");
    assert!(
        wrong.is_empty(),
        "{} keys the manual names are not the configuration's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_exit_code_the_manual_gives_is_the_programs() {
    let table = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/exit-codes.md"),
    )
    .unwrap();
    let known: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(' ').next())
        .filter(|c| c.chars().all(|ch| ch.is_ascii_digit()))
        .map(String::from)
        .collect();
    assert!(known.len() >= 8, "{known:?}");
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let words: Vec<&str> = text.split_whitespace().collect();
        for pair in words.windows(2) {
            let said = pair[0].trim_start_matches(['(', '`']).to_ascii_lowercase();
            if !matches!(said.as_str(), "exit" | "exits" | "exit:") {
                continue;
            }
            let code: String = pair[1].chars().take_while(char::is_ascii_digit).collect();
            // Two digits and more are other programs' (a shell's 127, a CLI's 41),
            // but for an interruption's 130.
            if code.is_empty() || (code.len() > 1 && code != "130") {
                continue;
            }
            checked += 1;
            if !known.contains(&code) {
                wrong.push(format!(
                    "{}: exit {code}",
                    page.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(checked > 20, "only {checked} exit codes found");
    assert!(
        wrong.is_empty(),
        "exit codes the program has not: {wrong:?}"
    );
}

/// Every relative link of the README and the manual names a file that is there.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = pages();
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let base = file.parent().unwrap();
            // mdBook writes a chapter `README.md` as `index.html`, and a link to
            // it as `README.html`, which is not there: the book's link is broken.
            let in_book = file.starts_with(root.join("docs"));
            if !base.join(target).exists() || (in_book && target.ends_with("README.md")) {
                broken.push(format!(
                    "{}: {target}",
                    file.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}
