//! The tripwires that hold for a task, and which of them an iteration's diff and its
//! agent's log trip (`break` commands are run by the driver). Pure.

use agentloop_journal::{RunState, TripHit};
use agentloop_plan::Tripwire;

use super::diffgates::{DiffInput, MANIFESTS, is_dependency_line};

/// Evidence lines kept per tripwire.
const PER_WIRE: usize = 5;

/// The tripwires of task `task`: the plan's and its own, less those a person accepted
/// for it.
pub fn wires_for(s: &RunState, task: &str) -> Vec<String> {
    let accepted = s
        .task(task)
        .map(|t| t.tripwires_accepted.clone())
        .unwrap_or_default();
    s.plan
        .must_not
        .iter()
        .chain(s.plan_task(task).map(|t| &t.must_not).into_iter().flatten())
        .filter(|w| !accepted.contains(w))
        .cloned()
        .collect()
}

/// What of `diff` (the task's change so far) and `log` (what its agent printed, tool
/// calls included) trips `wires`.
pub fn tripped(wires: &[String], diff: &DiffInput, log: &str) -> Vec<TripHit> {
    let mut hits = Vec::new();
    for text in wires {
        // Checked when the plan was read; a line that no longer reads trips nothing.
        let Ok(wire) = Tripwire::parse(text) else {
            continue;
        };
        let mut evidence: Vec<String> = Vec::new();
        match &wire {
            Tripwire::Touch(globs) => {
                for f in &diff.files {
                    if let Some(g) = globs.iter().find(|g| g.matches(&f.path)) {
                        evidence.push(format!("{} changed ({})", f.path, g.text));
                    }
                }
            }
            Tripwire::Match(re) => {
                for f in &diff.files {
                    for (n, line) in &f.added {
                        if re.is_match(line) {
                            evidence.push(format!("{}:{n}: {}", f.path, line.trim()));
                        }
                    }
                }
            }
            Tripwire::AddDependency => {
                for f in &diff.files {
                    let name = f.path.rsplit('/').next().unwrap_or(&f.path);
                    if !MANIFESTS.contains(&name) {
                        continue;
                    }
                    // A package.json whose whole text the diff holds (a one-line
                    // file, a new one, one written anew) is read as JSON: the
                    // dependencies it names that the old text did not.
                    if name == "package.json"
                        && let Some(added) = npm_dependencies_added(f)
                    {
                        for dep in added {
                            evidence.push(format!("{}:1: adds the dependency {dep}", f.path));
                        }
                        continue;
                    }
                    for (n, line) in &f.added {
                        if is_dependency_line(name, line)
                            && !f.removed.iter().any(|r| r.trim() == line.trim())
                        {
                            evidence.push(format!("{}:{n}: {}", f.path, line.trim()));
                        }
                    }
                }
            }
            Tripwire::Run(command) => {
                let want = squeeze(command);
                // Most lines do not even name the program: skip them before any copy.
                // (Its last path part: JSON logs may escape the slashes.)
                let first = want
                    .split(' ')
                    .next()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_matches('"');
                for line in log.lines().filter(|l| l.contains(first)) {
                    // JSON tool logs escape quotes and slashes.
                    let line = line.replace("\\\"", "\"").replace("\\/", "/");
                    if squeeze(&line).contains(&want) {
                        evidence.push(format!("the agent ran it: {}", cut(line.trim())));
                    }
                }
            }
            Tripwire::Break(_) => {}
        }
        let more = evidence.len().saturating_sub(PER_WIRE);
        evidence.truncate(PER_WIRE);
        if more > 0 {
            evidence.push(format!("and {more} more"));
        }
        if !evidence.is_empty() {
            hits.push(TripHit {
                wire: text.clone(),
                evidence: evidence.join("; "),
            });
        }
    }
    hits
}

/// The `break` commands among `wires`.
pub fn commands(wires: &[String]) -> Vec<(String, String)> {
    wires
        .iter()
        .filter_map(|w| match Tripwire::parse(w) {
            Ok(Tripwire::Break(c)) => Some((w.clone(), c)),
            _ => None,
        })
        .collect()
}

/// Runs of whitespace as one space.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The dependencies a package.json names after the change and not before, when the
/// diff holds its whole text before and after (`None`: it holds only some lines).
fn npm_dependencies_added(f: &super::diffgates::FileDiff) -> Option<Vec<String>> {
    fn names(text: &str) -> Option<std::collections::BTreeSet<String>> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let mut out = std::collections::BTreeSet::new();
        for section in [
            "dependencies",
            "devDependencies",
            "peerDependencies",
            "optionalDependencies",
        ] {
            if let Some(m) = v.get(section).and_then(serde_json::Value::as_object) {
                out.extend(m.keys().cloned());
            }
        }
        Some(out)
    }
    let after: String = f
        .added
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let after = names(&after)?;
    let before = if f.new || f.removed.is_empty() {
        Default::default()
    } else {
        names(&f.removed.join("\n"))?
    };
    Some(after.difference(&before).cloned().collect())
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diffgates::parse_unified;

    fn diff(text: &str) -> DiffInput {
        DiffInput {
            files: parse_unified(text),
            base_top: Default::default(),
        }
    }

    const DIFF: &str = "diff --git a/migrations/002.sql b/migrations/002.sql\nnew file mode 100644\n--- /dev/null\n+++ b/migrations/002.sql\n@@ -0,0 +1 @@\n+DROP TABLE users;\ndiff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -7,0 +8 @@\n+leftpad = \"1\"\ndiff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,0 +2 @@\n+unsafe { boom() }\n";

    #[test]
    fn each_tripwire_finds_what_it_forbids_and_no_more() {
        let wires: Vec<String> = [
            "touch migrations/",
            "touch docs/",
            "match /unsafe\\s*\\{/",
            "add dependency",
            "run git push --force",
            "break true",
        ]
        .map(String::from)
        .to_vec();
        let log =
            "{\"type\":\"tool_use\",\"input\":{\"command\":\"git  push --force origin main\"}}\n";
        let hits = tripped(&wires, &diff(DIFF), log);
        let names: Vec<&str> = hits.iter().map(|h| h.wire.as_str()).collect();
        assert_eq!(
            names,
            [
                "touch migrations/",
                "match /unsafe\\s*\\{/",
                "add dependency",
                "run git push --force"
            ]
        );
        assert_eq!(hits[0].evidence, "migrations/002.sql changed (migrations/)");
        assert_eq!(hits[1].evidence, "src/lib.rs:2: unsafe { boom() }");
        assert_eq!(hits[2].evidence, "Cargo.toml:8: leftpad = \"1\"");
        assert!(hits[3].evidence.contains("git  push --force origin main"));
        assert_eq!(
            commands(&wires),
            [("break true".to_string(), "true".to_string())]
        );
        assert!(tripped(&wires, &diff(""), "git push origin main").is_empty());
    }

    /// A package.json on one line is read as JSON: a dependency added there trips,
    /// a description does not.
    #[test]
    fn a_one_line_package_json_is_read_for_its_dependencies() {
        let wires = vec!["add dependency".to_string()];
        let one_line = |before: &str, after: &str| {
            format!(
                "diff --git a/package.json b/package.json\n--- a/package.json\n+++ b/package.json\n@@ -1 +1 @@\n-{before}\n+{after}\n"
            )
        };
        let hits = tripped(
            &wires,
            &diff(&one_line(
                r#"{"name":"x","dependencies":{"a":"1"}}"#,
                r#"{"name":"x","dependencies":{"a":"1","left-pad":"^1.3.0"}}"#,
            )),
            "",
        );
        assert_eq!(hits.len(), 1);
        assert_eq!(
            hits[0].evidence,
            "package.json:1: adds the dependency left-pad"
        );
        let hits = tripped(
            &wires,
            &diff(&one_line(
                r#"{"name":"x","dependencies":{"a":"1"}}"#,
                r#"{"name":"x","description":"y","dependencies":{"a":"2"}}"#,
            )),
            "",
        );
        assert!(hits.is_empty(), "{hits:?}");
    }
}
