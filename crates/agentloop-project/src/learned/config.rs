//! The words of the runners' configurations and commands that load files by name:
//! pytest's `-p` and `pytest_plugins`, the loader keys of Jest, Vitest and Mocha
//! configurations (JavaScript, JSON, YAML).

use crate::harness::normalise;

use super::Tree;

/// Keys of a JavaScript runner's configuration (Jest, Vitest, Mocha) whose strings
/// name files it loads as part of the harness: setup files, environments,
/// transformers, reporters, resolvers. Anything else (coverage patterns, roots,
/// aliases, module mappings to the project's own code) is not taken for a plugin.
pub(super) const LOADERS: &[&str] = &[
    "setupFiles",
    "setupFilesAfterEnv",
    "globalSetup",
    "globalTeardown",
    "testEnvironment",
    "environment",
    "transform",
    "snapshotResolver",
    "reporters",
    "watchPlugins",
    "testSequencer",
    "resolver",
    "runner",
    "testRunner",
    "sequencer",
    "require",
    "file",
];

/// JavaScript runner configurations whose loaders are read.
pub(super) const JS_CONFIGS: &[&str] = &[
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "vite.config.*",
    ".mocharc*",
];

/// Whether a command's words run pytest (`pytest`, `py.test`, `python -m pytest`).
pub(super) fn runs_pytest(words: &[String]) -> bool {
    words.iter().enumerate().any(|(i, w)| {
        let w = w.rsplit('/').next().unwrap_or(w);
        w == "pytest"
            || w == "py.test"
            || (w == "-m" && words.get(i + 1).is_some_and(|m| m == "pytest"))
    })
}

/// The configuration files a command names for its runner (`--config x.js`,
/// `--config=x.js`, `-c x.js`) that are files of the tree.
pub(super) fn named_configs(words: &[String], tree: &Tree<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let value = match w.as_str() {
            "--config" | "-c" => words.get(i + 1).map(String::as_str),
            w => w.strip_prefix("--config="),
        };
        if let Some(v) = value.and_then(|v| normalise("", v))
            && tree.paths.contains(v.as_str())
        {
            out.push(v);
        }
    }
    out
}

/// The plugins `-p` loads from the `addopts` of a pytest configuration file's pytest
/// section (`[pytest]`, `[tool:pytest]`, `[tool.pytest.ini_options]`).
pub(super) fn addopts_plugins(path: &str, text: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let value = if name.ends_with(".toml") {
        let table = text.parse::<toml::Table>().unwrap_or_default();
        let section = if name == "pyproject.toml" {
            table
                .get("tool")
                .and_then(|t| t.get("pytest"))
                .and_then(|t| t.get("ini_options"))
        } else {
            table.get("pytest")
        };
        match section.and_then(|s| s.get("addopts")) {
            Some(toml::Value::String(s)) => s.clone(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        }
    } else {
        ini_addopts(text)
    };
    let words: Vec<String> = value.split_whitespace().map(str::to_string).collect();
    dash_p(&words)
}

/// `addopts` of an ini file's `[pytest]` or `[tool:pytest]` section, its indented
/// continuation lines joined.
pub(super) fn ini_addopts(text: &str) -> String {
    let mut out = String::new();
    let (mut in_pytest, mut in_value) = (false, false);
    for line in text.lines() {
        let t = line.trim();
        if let Some(section) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            in_pytest = matches!(section.trim(), "pytest" | "tool:pytest");
            in_value = false;
            continue;
        }
        if !in_pytest {
            continue;
        }
        if in_value && line.starts_with([' ', '\t']) && !t.is_empty() {
            out.push(' ');
            out.push_str(t);
            continue;
        }
        in_value = false;
        if let Some((key, value)) = t.split_once('=')
            && key.trim() == "addopts"
        {
            out.push(' ');
            out.push_str(value.trim());
            in_value = true;
        }
    }
    out
}

/// The plugins `-p NAME` (or `-pNAME`) loads among pytest's words; `-p no:x` loads
/// none.
pub(super) fn dash_p(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let name = match w.as_str() {
            "-p" => words.get(i + 1).map(String::as_str),
            w => w
                .strip_prefix("-p")
                .filter(|n| !n.is_empty() && !n.starts_with('-')),
        };
        if let Some(n) = name.filter(|n| !n.starts_with("no:") && is_dotted(n)) {
            out.push(n.to_string());
        }
    }
    out
}

pub(super) fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !p.starts_with(|c: char| c.is_ascii_digit())
        })
}

/// The modules a `conftest.py`'s `pytest_plugins = [...]` (or `= "x"`) names.
pub(super) fn pytest_plugins(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("pytest_plugins") else {
            continue;
        };
        // `= [...]`, `+= [...]`, `: list[str] = [...]`.
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix(':') {
            Some(annotated) => annotated.split_once('=').map_or("", |(_, v)| v),
            None => match rest.strip_prefix("+=").or_else(|| rest.strip_prefix('=')) {
                Some(v) => v,
                None => continue,
            },
        };
        // To the closing bracket when the value opens one, else the line.
        let mut value = rest.to_string();
        if rest.contains(['[', '(']) && !rest.contains([']', ')']) {
            for more in text.lines().skip(i + 1) {
                value.push('\n');
                value.push_str(more);
                if more.contains([']', ')']) {
                    break;
                }
            }
        }
        out.extend(literals(&value).into_iter().filter(|s| is_dotted(s)));
    }
    out
}

/// The string literals of `text` (`'…'`, `"…"`, `` `…` ``), each with the offsets
/// of its opening quote and of what follows its closing one.
pub(super) fn literals_at(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut s = String::new();
        let mut closed = None;
        while let Some((j, d)) = chars.next() {
            if d == '\\' {
                chars.next();
                continue;
            }
            if d == c {
                closed = Some(j + d.len_utf8());
                break;
            }
            if d == '\n' && c != '`' {
                break;
            }
            s.push(d);
        }
        if let Some(end) = closed {
            out.push((i, end, s));
        }
    }
    out
}

pub(super) fn literals(text: &str) -> Vec<String> {
    literals_at(text).into_iter().map(|(_, _, s)| s).collect()
}

/// The strings of a JavaScript or JSON runner configuration that name a file it
/// loads: not a key, and under a key of [`LOADERS`].
pub(super) fn config_strings(text: &str) -> Vec<String> {
    literals_at(text)
        .into_iter()
        .filter(|(at, end, _)| {
            !text[*end..].trim_start().starts_with(':')
                && last_key(&text[..*at]).is_some_and(|k| LOADERS.contains(&k))
        })
        .map(|(_, _, s)| s)
        .collect()
}

/// The files a YAML runner configuration (`.mocharc.yml`) loads: the values of
/// [`LOADERS`] keys, quoted or not, one or a list.
pub(super) fn yaml_loaders(text: &str) -> Vec<String> {
    let unquote = |v: &str| v.trim().trim_matches(['"', '\'']).to_string();
    let mut out = Vec::new();
    let mut in_list = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(item) = t.strip_prefix("- ") {
            if in_list {
                out.push(unquote(item));
            }
            continue;
        }
        in_list = false;
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        if !LOADERS.contains(&key.trim()) {
            continue;
        }
        let value = value.trim();
        if value.is_empty() {
            in_list = true;
        } else if let Some(list) = value.strip_prefix('[') {
            out.extend(list.trim_end_matches(']').split(',').map(unquote));
        } else {
            out.push(unquote(value));
        }
    }
    out
}

/// The last unquoted `key:` (or `"key":`) before the end of `text`.
pub(super) fn last_key(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut i = text.len();
    while i > 0 {
        i -= 1;
        if bytes[i] != b':' {
            continue;
        }
        let head = text[..i].trim_end();
        let head = head.trim_end_matches(['"', '\'']);
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
            .map_or(0, |(k, c)| k + c.len_utf8());
        let key = &head[start..];
        if !key.is_empty() {
            return Some(key);
        }
    }
    None
}

/// The strings of `package.json`'s `jest` and `mocha` settings.
pub(super) fn package_json_strings(text: &str) -> Vec<String> {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in ["jest", "mocha"] {
        if let Some(v) = json.get(key) {
            strings(v, None, &mut out);
        }
    }
    out
}

pub(super) fn strings(v: &serde_json::Value, key: Option<&str>, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if key.is_some_and(|k| LOADERS.contains(&k)) => {
            out.push(s.clone())
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, key, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| strings(x, Some(k), out)),
        _ => {}
    }
}
