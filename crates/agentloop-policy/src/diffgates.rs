//! Diff-triggered gates: what a run's diff touches decides which reviews its pull
//! request waits for. Pure: the driver reads the diff, this says which gates it
//! triggers and where.
//!
//! - security: its paths (auth, crypto, session, permission, secret, …) or an added
//!   line that handles secrets or crypto;
//! - database: migrations, `*.sql`, schema files, or an added `CREATE/ALTER/DROP TABLE`;
//! - external: a dependency added to a manifest (Cargo.toml, package.json,
//!   pyproject.toml, go.mod, requirements.txt, Gemfile), or an added URL to a host
//!   the diff did not have before;
//! - architecture: a file in a new top-level directory, a new manifest (a new crate,
//!   package or module), or an exported function's declaration changed or removed
//!   (`signature`);
//! - each gate's own `paths` and `patterns` besides. (deploy is not about the diff: it
//!   holds every merge agentloop makes.)

use std::collections::BTreeSet;

use agentloop_ground::values::{DiffGate, Gates};
use agentloop_journal::GateTrigger;

/// What the diff changed, as the driver read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiffInput {
    pub files: Vec<FileDiff>,
    /// The names at the top of the base tree.
    pub base_top: BTreeSet<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileDiff {
    pub path: String,
    /// The file is new.
    pub new: bool,
    /// Added lines: (line number in the new file, text).
    pub added: Vec<(u32, String)>,
    /// Removed lines' text (to tell a new URL host from one moved around).
    pub removed: Vec<String>,
}

/// The diff gates in the order they are asked for.
pub const ORDER: [&str; 4] = ["security", "database", "external", "architecture"];

/// Each gate's built-in paths and added-line patterns, which hold whatever its own
/// `paths` and `patterns` add.
fn built_in(gate: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match gate {
        "security" => (
            &[
                "auth",
                "crypto",
                "session",
                "permission",
                "secret",
                "credential",
                ".env",
                "security/",
            ],
            &[
                r"(?i)(password|passwd|secret|private[_-]?key|api[_-]?key|access[_-]?token)\s*[:=]",
                r"(?i)\b(bcrypt|argon2|hmac|jwt|csrf|set_permissions|chmod)\b",
            ],
        ),
        "database" => (
            &[
                "migrations/",
                "migrate/",
                "*.sql",
                "schema.rb",
                "schema.prisma",
                "db/schema",
            ],
            &[r"(?i)\b(create|alter|drop)\s+(table|index|column)\b"],
        ),
        _ => (&[], &[]),
    }
}

/// At most this many triggers are kept per gate (the first ones).
const PER_GATE: usize = 20;

pub(crate) const MANIFESTS: [&str; 6] = [
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "go.mod",
    "requirements.txt",
    "Gemfile",
];

/// `pattern` of a gate's `paths`: `dir/` anywhere in the path, `*.ext`, or a fragment
/// of one of the path's components.
pub fn path_matches(path: &str, pattern: &str) -> bool {
    if let Some(dir) = pattern.strip_suffix('/') {
        return path.split('/').rev().skip(1).any(|c| c == dir);
    }
    if let Some(ext) = pattern.strip_prefix("*.") {
        return path
            .rsplit('/')
            .next()
            .is_some_and(|n| n.ends_with(&format!(".{ext}")));
    }
    let p = pattern.to_ascii_lowercase();
    path.split('/').any(|c| c.to_ascii_lowercase().contains(&p))
}

fn gate_of<'a>(gates: &'a Gates, name: &str) -> Option<&'a DiffGate> {
    match name {
        "security" => Some(&gates.security),
        "database" => Some(&gates.database),
        "external" => Some(&gates.external),
        "architecture" => Some(&gates.architecture),
        "deploy" => Some(&gates.deploy),
        _ => None,
    }
}

/// Gate `name` is on.
pub fn enabled(gates: &Gates, name: &str) -> bool {
    gate_of(gates, name).is_some_and(|g| g.enabled)
}

/// What a change that cannot be read triggers: every gate that is on, so that no gate
/// is passed by not looking.
pub fn unread(gates: &Gates, why: &str) -> Vec<GateTrigger> {
    ORDER
        .iter()
        .filter(|g| enabled(gates, g))
        .map(|g| GateTrigger {
            gate: g.to_string(),
            file: "(unread)".into(),
            line: None,
            why: why.to_string(),
        })
        .collect()
}

/// A run without a forge holds each done task whose change triggers a diff gate: its
/// diff read first (`CheckDiff`; a task done without a commit too, which holds it),
/// then the gate opened until a person releases it.
pub(super) fn hold(s: &agentloop_journal::RunState) -> Option<crate::action::Action> {
    use agentloop_journal::{Event, Gate, TaskStatus};
    if s.settings.ship.enabled() || !s.settings.gates.any_diff_gate() {
        return None;
    }
    if let Some(t) = s.tasks.iter().find(|t| {
        t.status == TaskStatus::Done
            && !t.diff_checked
            && s.running.iter().all(|o| o.started.task != t.id)
    }) {
        return Some(crate::action::Action::CheckDiff { task: t.id.clone() });
    }
    ORDER
        .iter()
        .find(|g| s.tasks.iter().any(|t| t.held.iter().any(|h| h.gate == **g)))
        .map(|g| {
            crate::action::Action::Record(Event::GateOpened {
                gate: Gate::Diff(g.to_string()),
            })
        })
}

/// The reviewers of gate `name`.
pub fn reviewers<'a>(gates: &'a Gates, name: &str) -> &'a [String] {
    gate_of(gates, name).map_or(&[], |g| g.reviewers.as_slice())
}

/// The hosts of the http(s) URLs in `text`.
fn hosts(text: &str) -> Vec<String> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"https?://([A-Za-z0-9.-]+)").expect("the URL pattern is valid")
    });
    RE.captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_ascii_lowercase()))
        .filter(|h| {
            !matches!(h.as_str(), "localhost" | "127.0.0.1" | "0.0.0.0")
                && !h.ends_with(".invalid")
                && !h.ends_with("example.com")
                && !h.ends_with("example.org")
        })
        .collect()
}

/// An added line in a manifest that looks like a dependency (`name = "1.2"`,
/// `"name": "^1.2"`, `require x v1.2`, `name==1.2`, `gem "x"`).
pub(crate) fn is_dependency_line(file: &str, line: &str) -> bool {
    let l = line.trim();
    if l.is_empty() || l.starts_with('#') || l.starts_with("//") || l.starts_with('[') {
        return false;
    }
    match file {
        "Cargo.toml" | "pyproject.toml" => {
            l.contains('=')
                && !l.starts_with("version")
                && !l.starts_with("name")
                && !l.starts_with("edition")
        }
        "package.json" => {
            l.starts_with('"')
                && l.contains(':')
                && !l.starts_with("\"version\"")
                && !l.starts_with("\"name\"")
                && !l.starts_with("\"scripts\"")
        }
        "go.mod" => l.starts_with("require") || (l.contains(' ') && l.contains(" v")),
        "requirements.txt" => true,
        "Gemfile" => l.starts_with("gem "),
        _ => false,
    }
}

/// Which enabled gates the diff of an interface update triggers: the architecture
/// gate for the whole change (its first file), besides what [`triggered`] finds.
pub fn triggered_interface(gates: &Gates, diff: &DiffInput, why: &str) -> Vec<GateTrigger> {
    let mut out = triggered(gates, diff);
    if enabled(gates, "architecture")
        && !out.iter().any(|t| t.gate == "architecture")
        && let Some(f) = diff.files.first()
    {
        out.push(GateTrigger {
            gate: "architecture".into(),
            file: f.path.clone(),
            line: None,
            why: format!(
                "an interface update ({why}): what it changed ({} {}) is reviewed as architecture",
                diff.files.len(),
                if diff.files.len() == 1 {
                    "file"
                } else {
                    "files"
                }
            ),
        });
    }
    out
}

/// Which enabled gates the diff triggers, and where.
pub fn triggered(gates: &Gates, diff: &DiffInput) -> Vec<GateTrigger> {
    let mut out: Vec<GateTrigger> = Vec::new();
    let mut push = |t: GateTrigger| {
        if out.iter().filter(|o| o.gate == t.gate).count() < PER_GATE
            && !out
                .iter()
                .any(|o| o.gate == t.gate && o.file == t.file && o.line == t.line)
        {
            out.push(t);
        }
    };
    let old_hosts: BTreeSet<String> = diff
        .files
        .iter()
        .flat_map(|f| f.removed.iter().flat_map(|l| hosts(l)))
        .collect();
    for name in ORDER {
        let Some(g) = gate_of(gates, name).filter(|g| g.enabled) else {
            continue;
        };
        let (paths, patterns) = built_in(name);
        let paths: Vec<&str> = paths
            .iter()
            .copied()
            .chain(g.paths.iter().map(String::as_str))
            .collect();
        let patterns: Vec<regex::Regex> = patterns
            .iter()
            .copied()
            .chain(g.patterns.iter().map(String::as_str))
            .filter_map(|p| regex::Regex::new(p).ok())
            .collect();
        for f in &diff.files {
            let file_name = f.path.rsplit('/').next().unwrap_or(&f.path);
            if let Some(p) = paths.iter().find(|p| path_matches(&f.path, p)) {
                push(GateTrigger {
                    gate: name.into(),
                    file: f.path.clone(),
                    line: None,
                    why: format!("the path matches `{p}`"),
                });
            }
            for (n, text) in &f.added {
                if let Some(re) = patterns.iter().find(|re| re.is_match(text)) {
                    push(GateTrigger {
                        gate: name.into(),
                        file: f.path.clone(),
                        line: Some(*n),
                        why: format!("an added line matches `{}`", re.as_str()),
                    });
                }
            }
            match name {
                "external" => {
                    if MANIFESTS.contains(&file_name) {
                        for (n, text) in &f.added {
                            if is_dependency_line(file_name, text) {
                                push(GateTrigger {
                                    gate: name.into(),
                                    file: f.path.clone(),
                                    line: Some(*n),
                                    why: format!("a dependency is added: {}", text.trim()),
                                });
                            }
                        }
                    }
                    for (n, text) in &f.added {
                        for h in hosts(text) {
                            if !old_hosts.contains(&h) {
                                push(GateTrigger {
                                    gate: name.into(),
                                    file: f.path.clone(),
                                    line: Some(*n),
                                    why: format!("a URL to a new host: {h}"),
                                });
                            }
                        }
                    }
                }
                "architecture" if !f.new => {
                    for (line, old, new) in crate::signature::changed(&f.path, &f.added, &f.removed)
                    {
                        push(GateTrigger {
                            gate: name.into(),
                            file: f.path.clone(),
                            line,
                            why: match new {
                                Some(new) => {
                                    format!("an exported signature changed: `{old}` → `{new}`")
                                }
                                None => format!("an exported function is removed: `{old}`"),
                            },
                        });
                    }
                }
                "architecture" => {
                    let top = f.path.split('/').next().unwrap_or(&f.path);
                    if f.path.contains('/') && !diff.base_top.contains(top) {
                        push(GateTrigger {
                            gate: name.into(),
                            file: f.path.clone(),
                            line: None,
                            why: format!("a new top-level directory: {top}/"),
                        });
                    } else if MANIFESTS.contains(&file_name) {
                        push(GateTrigger {
                            gate: name.into(),
                            file: f.path.clone(),
                            line: None,
                            why: "a new crate, package or module".into(),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Reads `git diff --unified=0` output into per-file added and removed lines.
pub fn parse_unified(text: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut line_no = 0u32;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("diff --git ") {
            let path = rest
                .rsplit_once(" b/")
                .map(|(_, b)| b.to_string())
                .unwrap_or_default();
            files.push(FileDiff {
                path,
                ..FileDiff::default()
            });
        } else if l.starts_with("new file mode") {
            if let Some(f) = files.last_mut() {
                f.new = true;
            }
        } else if let Some(h) = l.strip_prefix("@@ ") {
            // @@ -a,b +c,d @@
            line_no = h
                .split_whitespace()
                .find_map(|w| w.strip_prefix('+'))
                .and_then(|w| w.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        } else if l.starts_with("+++") || l.starts_with("---") {
        } else if let Some(added) = l.strip_prefix('+') {
            if let Some(f) = files.last_mut() {
                f.added.push((line_no, added.to_string()));
            }
            line_no += 1;
        } else if let Some(removed) = l.strip_prefix('-')
            && let Some(f) = files.last_mut()
        {
            f.removed.push(removed.to_string());
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> Gates {
        let mut g = Gates::default();
        for d in [
            &mut g.security,
            &mut g.database,
            &mut g.external,
            &mut g.architecture,
        ] {
            d.enabled = true;
        }
        g
    }

    fn file(path: &str, new: bool, added: &[&str]) -> FileDiff {
        FileDiff {
            path: path.into(),
            new,
            added: added
                .iter()
                .enumerate()
                .map(|(i, l)| (i as u32 + 1, l.to_string()))
                .collect(),
            removed: Vec::new(),
        }
    }

    fn gates_of(t: &[GateTrigger]) -> Vec<&str> {
        let mut g: Vec<&str> = t.iter().map(|t| t.gate.as_str()).collect();
        g.dedup();
        g
    }

    /// A gate's own `paths` and `patterns` are besides its built-in rules, as the
    /// reference says: `paths = ["billing/"]` still holds a change under `auth/`.
    #[test]
    fn a_gates_own_paths_add_to_its_built_in_rules() {
        let mut g = on();
        g.security.paths = vec!["billing/".into()];
        g.security.patterns = vec!["charge\\(".into()];
        let d = |path: &str, added: &[&str]| DiffInput {
            files: vec![file(path, false, added)],
            base_top: ["src".to_string()].into(),
        };
        for (path, added) in [
            ("src/auth/login.txt", &["x"][..]),
            ("src/billing/pay.rs", &["x"]),
            ("src/pay.rs", &["charge(card)"]),
            ("src/pay.rs", &["let api_key = k;"]),
        ] {
            assert_eq!(
                gates_of(&triggered(&g, &d(path, added))),
                ["security"],
                "{path}: {added:?}"
            );
        }
    }

    #[test]
    fn each_gate_by_what_the_diff_touches() {
        let base_top: BTreeSet<String> = [
            "src".to_string(),
            "db".to_string(),
            "Cargo.toml".to_string(),
        ]
        .into();
        let d = |files| DiffInput {
            files,
            base_top: base_top.clone(),
        };
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file("src/auth/login.rs", false, &["fn login() {}"])])
            )),
            ["security"]
        );
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file(
                    "src/config.rs",
                    false,
                    &["let api_key = env(\"K\");"]
                )])
            )),
            ["security"]
        );
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file(
                    "db/migrations/002.sql",
                    true,
                    &["ALTER TABLE users ADD COLUMN age int;"]
                )])
            )),
            ["database"]
        );
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file("Cargo.toml", false, &["serde = \"1\""])])
            )),
            ["external"]
        );
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file(
                    "src/net.rs",
                    false,
                    &["let u = \"https://api.stripe.com/v1\";"]
                )])
            )),
            ["external"]
        );
        assert_eq!(
            gates_of(&triggered(
                &on(),
                &d(vec![file("plugins/x/lib.rs", true, &["pub fn x() {}"])])
            )),
            ["architecture"]
        );
        assert!(
            triggered(
                &on(),
                &d(vec![file(
                    "src/lib.rs",
                    false,
                    &["pub fn add(a: i32) -> i32 { a }"]
                )])
            )
            .is_empty()
        );
        // Off by default.
        assert!(
            triggered(
                &Gates::default(),
                &d(vec![file("src/auth/login.rs", false, &["x"])])
            )
            .is_empty()
        );
    }

    #[test]
    fn a_unified_diff_is_read_with_line_numbers() {
        let text = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -3,0 +4,2 @@ fn x\n+let token = 1;\n+let y = 2;\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n";
        let f = parse_unified(text);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].path, "src/a.rs");
        assert_eq!(
            f[0].added,
            vec![
                (4, "let token = 1;".to_string()),
                (5, "let y = 2;".to_string())
            ]
        );
        assert!(f[1].new && f[1].added == vec![(1, "hello".to_string())]);
    }
}
