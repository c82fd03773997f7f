//! `[prompt.require_skills]`: the skills a project requires in each phase of the loop
//! (seed 004's mandatory skills). agentloop's own prompts stand in for the seeds'
//! skills (DEVELOP, DEBUG with its instrumentation step, the reviewer; VALIDATE is
//! agentloop running the checks itself); a project that has skills of its own names
//! them here. Each must be installed when the run starts, and the prompt of each
//! iteration of that phase names it with its `SKILL.md`: a CLI with skills (Claude
//! Code) uses it as one, any other reads the file and follows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The skills required in each phase, by name (`.claude/skills/NAME/SKILL.md`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RequireSkills {
    /// Working on a task (and its retries, replans and fallbacks).
    pub develop: Vec<String>,
    /// A DEBUG iteration: finding a failure's cause before fixing it.
    pub debug: Vec<String>,
    /// Fixing what the VALIDATE phase found (the `VALIDATE-N` tasks).
    pub validate: Vec<String>,
    /// The independent reviewer of each verified task.
    pub review: Vec<String>,
}

/// A required skill, found: its name and its `SKILL.md` (relative to the project when
/// it is the project's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    pub name: String,
    pub file: String,
}

impl RequireSkills {
    pub fn is_empty(&self) -> bool {
        self.phases().all(|(_, names)| names.is_empty())
    }

    fn phases(&self) -> impl Iterator<Item = (&'static str, &Vec<String>)> {
        [
            ("develop", &self.develop),
            ("debug", &self.debug),
            ("validate", &self.validate),
            ("review", &self.review),
        ]
        .into_iter()
    }

    /// Each required skill's `SKILL.md`, by phase: the project's
    /// (`.claude/skills/NAME/`) first, then the user's (`$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`, `/skills/NAME/`). The error names the first one missing and where
    /// it was looked for.
    pub fn find(&self, root: &Path) -> Result<BTreeMap<String, Vec<Skill>>, String> {
        let user = std::env::var_os("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")));
        let mut out = BTreeMap::new();
        for (phase, names) in self.phases() {
            let mut found = Vec::new();
            for name in names {
                if name.is_empty()
                    || name.starts_with('.')
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
                {
                    return Err(format!(
                        "[prompt.require_skills] {phase}: `{name}` is not a skill's name (letters, digits, - _ . :)"
                    ));
                }
                let project = Path::new(".claude/skills").join(name).join("SKILL.md");
                let file = if root.join(&project).is_file() {
                    project.display().to_string()
                } else if let Some(f) = user
                    .as_ref()
                    .map(|u| u.join("skills").join(name).join("SKILL.md"))
                    .filter(|f| f.is_file())
                {
                    f.display().to_string()
                } else {
                    return Err(format!(
                        "[prompt.require_skills] {phase}: the skill `{name}` is not installed (no {}{})",
                        project.display(),
                        user.as_ref()
                            .map(|u| format!(
                                " nor {}",
                                u.join("skills").join(name).join("SKILL.md").display()
                            ))
                            .unwrap_or_default()
                    ));
                };
                found.push(Skill {
                    name: name.clone(),
                    file,
                });
            }
            if !found.is_empty() {
                out.insert(phase.to_string(), found);
            }
        }
        Ok(out)
    }
}

/// The prompt's section naming the skills `phase` requires (empty when none).
pub fn prompt_section(skills: &BTreeMap<String, Vec<Skill>>, phase: &str) -> String {
    let Some(list) = skills.get(phase).filter(|l| !l.is_empty()) else {
        return String::new();
    };
    let mut p = format!(
        "## Skills this project requires here ({phase})\n\nUse each of these skills for this work; if your tool has no skills, read its SKILL.md first and follow it:\n"
    );
    for s in list {
        p.push_str(&format!("- `{}` ({})\n", s.name, s.file));
    }
    p.push('\n');
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_in_the_project_or_the_users_directory_or_refused() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".claude/skills/tdd")).unwrap();
        std::fs::write(root.path().join(".claude/skills/tdd/SKILL.md"), "# TDD\n").unwrap();
        std::fs::create_dir_all(home.path().join("skills/root-cause")).unwrap();
        std::fs::write(home.path().join("skills/root-cause/SKILL.md"), "# RC\n").unwrap();
        // SAFETY: this test alone reads CLAUDE_CONFIG_DIR in this process.
        unsafe { std::env::set_var("CLAUDE_CONFIG_DIR", home.path()) };
        let req = RequireSkills {
            develop: vec!["tdd".into()],
            debug: vec!["root-cause".into()],
            ..Default::default()
        };
        let found = req.find(root.path()).unwrap();
        assert_eq!(found["develop"][0].file, ".claude/skills/tdd/SKILL.md");
        assert!(
            found["debug"][0]
                .file
                .ends_with("skills/root-cause/SKILL.md")
        );
        let section = prompt_section(&found, "develop");
        assert!(
            section.contains("- `tdd` (.claude/skills/tdd/SKILL.md)"),
            "{section}"
        );
        assert_eq!(prompt_section(&found, "validate"), "");
        let missing = RequireSkills {
            review: vec!["security-review".into()],
            ..Default::default()
        };
        let e = missing.find(root.path()).unwrap_err();
        assert!(e.starts_with("[prompt.require_skills] review: the skill `security-review` is not installed (no .claude/skills/security-review/SKILL.md nor "), "{e}");
        let bad = RequireSkills {
            develop: vec!["../../etc".into()],
            ..Default::default()
        };
        assert!(
            bad.find(root.path())
                .unwrap_err()
                .contains("is not a skill's name")
        );
    }
}
