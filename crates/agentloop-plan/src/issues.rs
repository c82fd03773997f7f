//! Issues from a tracker as a plan: one task per issue, its title, its body (without
//! what becomes fields), checklist items as acceptance criteria, `Verify:` lines as
//! checks, "depends on #N" / "blocked by ENG-7" as dependencies on the issues imported
//! with it. The plan's front matter names the tracker, so a run keeps the issues'
//! status in step.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::{Criterion, Plan, Task};

/// One issue, already given its task id.
#[derive(Debug, Clone)]
pub struct IssueTask {
    pub id: String,
    pub title: String,
    pub body: String,
    pub url: String,
}

static DEPENDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:depends on|blocked by|after)\s+((?:(?:#|[A-Z][A-Z0-9]*-)\d+(?:\s*(?:,|and)\s*)?)+)")
        .expect("the dependency pattern is valid")
});
static REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(#|[A-Za-z][A-Za-z0-9]*-)(\d+)").expect("the reference pattern is valid")
});

/// The plan made of `issues`; `dep` turns a reference (`#12`, `ENG-7`) into the task id
/// of an imported issue.
pub fn plan_from_issues(
    source: &str,
    tracker: &str,
    issues: &[IssueTask],
    dep: &dyn Fn(&str) -> Option<String>,
) -> Plan {
    let ids: Vec<&str> = issues.iter().map(|i| i.id.as_str()).collect();
    let tasks = issues
        .iter()
        .map(|i| {
            let mut body = Vec::new();
            let mut acceptance = Vec::new();
            let mut verify = Vec::new();
            let mut depends: Vec<String> = Vec::new();
            for line in i.body.lines() {
                let l = line.trim();
                let item = l
                    .strip_prefix("- [ ] ")
                    .or_else(|| l.strip_prefix("* [ ] "))
                    .map(|t| (t, false))
                    .or_else(|| {
                        l.strip_prefix("- [x] ")
                            .or_else(|| l.strip_prefix("- [X] "))
                            .or_else(|| l.strip_prefix("* [x] "))
                            .map(|t| (t, true))
                    });
                if let Some((text, checked)) = item {
                    acceptance.push(Criterion {
                        text: text.trim().to_string(),
                        checked,
                    });
                    continue;
                }
                if let Some(cmd) = l.strip_prefix("Verify:") {
                    verify.push(cmd.trim().trim_matches('`').to_string());
                    continue;
                }
                for c in DEPENDS.captures_iter(l) {
                    for r in REF.captures_iter(&c[1]) {
                        let reference = format!("{}{}", &r[1], &r[2]);
                        if let Some(d) =
                            dep(&reference).filter(|d| ids.contains(&d.as_str()) && *d != i.id)
                            && !depends.contains(&d)
                        {
                            depends.push(d);
                        }
                    }
                }
                body.push(line.trim_end());
            }
            let mut text = body.join("\n").trim().to_string();
            if !i.url.is_empty() {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&format!("Issue: {}", i.url));
            }
            Task {
                id: i.id.clone(),
                title: i.title.trim().to_string(),
                body: text,
                acceptance,
                verify,
                tests: Vec::new(),
                holdout: Vec::new(),
                depends,
                gate: None,
                agent: None,
                mode: None,
                scope: Vec::new(),
                max_iterations: None,
                milestone: false,
                reversibility: None,
                must_not: Vec::new(),
                criteria: Vec::new(),
                line: 0,
            }
        })
        .collect();
    let mut settings = serde_json::Map::new();
    settings.insert("tracker".into(), serde_json::json!({ "source": tracker }));
    Plan {
        title: format!("Issues from {source}"),
        goal: format!(
            "Resolve the open issues of {source}; each one's status is kept in step as the run goes."
        ),
        settings,
        shaped: Default::default(),
        must_not: Vec::new(),
        criteria: Vec::new(),
        tasks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklists_checks_and_dependencies_become_fields() {
        let issues = vec![
            IssueTask {
                id: "GH-1".into(),
                title: "Parser".into(),
                body: "Parse the file.\n\n- [ ] reads numbers\n- [x] reads names\nVerify: `cargo test parser`\n".into(),
                url: "https://github.invalid/o/r/issues/1".into(),
            },
            IssueTask {
                id: "GH-2".into(),
                title: "Printer".into(),
                body: "Depends on #1 and #9.\nPrint it.".into(),
                url: String::new(),
            },
        ];
        let p = plan_from_issues("github:o/r", "github:o/r", &issues, &|r| {
            r.strip_prefix('#').map(|n| format!("GH-{n}"))
        });
        assert_eq!(p.tasks[0].acceptance.len(), 2);
        assert!(p.tasks[0].acceptance[1].checked);
        assert_eq!(p.tasks[0].verify, ["cargo test parser"]);
        assert!(
            p.tasks[0]
                .body
                .ends_with("Issue: https://github.invalid/o/r/issues/1")
        );
        assert!(!p.tasks[0].body.contains("reads numbers"));
        assert_eq!(p.tasks[1].depends, ["GH-1"], "#9 was not imported");
        assert_eq!(p.settings["tracker"]["source"], "github:o/r");
    }
}
