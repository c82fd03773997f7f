//! How clear a plan is, and the shape of work that follows: a score 0–10 over five
//! dimensions (outcome, scope, constraints, success, done; 0–2 each, with the reason),
//! the shape it implies (tool ≥ 8: no check-ins; colleague 5–7: a gate after the plan,
//! after each task and before completion; intent < 5: not ready to run, with the
//! questions to answer), and each task's reversibility class (2A: under a minute to
//! roll back, 2B: under five, 1: hours — schema changes, public APIs, releases).

use serde::{Deserialize, Serialize};

use crate::model::{Class, Plan, Task};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    Tool,
    Colleague,
    Intent,
}

impl Shape {
    pub fn of(score: u8) -> Shape {
        match score {
            8.. => Shape::Tool,
            5..=7 => Shape::Colleague,
            _ => Shape::Intent,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Tool => "tool",
            Shape::Colleague => "colleague",
            Shape::Intent => "intent",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dimension {
    pub name: &'static str,
    pub score: u8,
    pub why: String,
    /// What to answer to raise it (below 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clarity {
    pub score: u8,
    pub shape: Shape,
    pub dimensions: Vec<Dimension>,
    /// Every task has a check agentloop runs and names the tests it must make pass:
    /// clear enough to run as a tool, whatever the score (its other dimensions only
    /// say how the work is worded).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub runnable: bool,
}

impl Clarity {
    pub fn questions(&self) -> Vec<&'static str> {
        self.dimensions.iter().filter_map(|d| d.question).collect()
    }

    /// `7/10 (outcome 2, scope 1, constraints 0, success 2, done 2)`.
    pub fn describe(&self) -> String {
        format!(
            "{}/10 ({})",
            self.score,
            self.dimensions
                .iter()
                .map(|d| format!("{} {}", d.name, d.score))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Of `n` tasks, how many `count` are: 2 for all, 1 for some, 0 for none.
fn share(count: usize, n: usize) -> u8 {
    match count {
        0 => 0,
        c if c == n => 2,
        _ => 1,
    }
}

/// A path-like word: `src/parser.rs`, `docs/`, `Cargo.toml`.
fn names_a_path(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || c == '`' || c == ',' || c == '(' || c == ')')
        .any(|w| {
            let w = w.trim_end_matches(['.', ':', ';']);
            w.len() > 2
                && (w.contains('/')
                    || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty()
                            && (1..=4).contains(&ext.len())
                            && ext.chars().all(|c| c.is_ascii_alphanumeric())
                            && !ext.chars().all(|c| c.is_ascii_digit())
                    }))
        })
}

fn dim(name: &'static str, score: u8, why: String, question: &'static str) -> Dimension {
    Dimension {
        name,
        score,
        why,
        question: (score < 2).then_some(question),
    }
}

pub fn assess(plan: &Plan) -> Clarity {
    let n = plan.tasks.len().max(1);
    let goal_words = plan.goal.split_whitespace().count();
    let outcome = match goal_words {
        8.. => dim(
            "outcome",
            2,
            format!("the goal says what should exist ({goal_words} words)"),
            "",
        ),
        1..=7 => dim(
            "outcome",
            1,
            "the goal is a few words".into(),
            "What should exist when this is done? Say it in the plan's goal paragraph.",
        ),
        _ => dim(
            "outcome",
            0,
            "no goal paragraph".into(),
            "What should exist when this is done? Say it in the plan's goal paragraph.",
        ),
    };
    let scoped = plan
        .tasks
        .iter()
        .filter(|t| !t.scope.is_empty() || names_a_path(&t.title) || names_a_path(&t.body))
        .count();
    let scope = dim(
        "scope",
        share(scoped, n),
        format!("{scoped} of {n} tasks name the files or modules they change"),
        "Which files or modules may each task change? (`Scope:` lines, or name them)",
    );
    let text = std::iter::once(plan.goal.as_str())
        .chain(plan.tasks.iter().map(|t| t.body.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
    let worded = [
        "must not", "mustn't", "do not", "don't", "never", "without", "keep ", "only ",
    ]
    .iter()
    .find(|w| text.contains(*w));
    let tripwires = !plan.must_not.is_empty() || plan.tasks.iter().any(|t| !t.must_not.is_empty());
    let constraints = match (tripwires, worded) {
        (true, _) => dim(
            "constraints",
            2,
            "tripwires say what must not happen".into(),
            "",
        ),
        (false, Some(w)) => dim(
            "constraints",
            1,
            format!("said in words (\"{}\"), not as tripwires", w.trim()),
            "What must not change? (`Must-not:` lines: paths, dependencies, commands)",
        ),
        _ => dim(
            "constraints",
            0,
            "nothing says what must not change".into(),
            "What must not change? (`Must-not:` lines: paths, dependencies, commands)",
        ),
    };
    let checked = plan
        .tasks
        .iter()
        .filter(|t| !plan.checks(&t.id).is_empty())
        .count();
    let success = dim(
        "success",
        share(checked, n),
        format!("{checked} of {n} tasks have a check agentloop runs"),
        "How is each task checked? (`Verify:` commands that fail now and pass once it is done)",
    );
    // The tests a task names are when it is finished, as exactly as it can be said.
    let defined = plan
        .tasks
        .iter()
        .filter(|t| !t.acceptance.is_empty() || !t.criteria.is_empty() || !t.tests.is_empty())
        .count();
    let done = dim(
        "done",
        share(defined, n).max(if plan.criteria.is_empty() { 0 } else { 1 }),
        format!(
            "{defined} of {n} tasks say when they are finished (acceptance, criteria or named tests)"
        ),
        "When is each task finished? (`Tests:` naming the tests it must make pass, `Acceptance:` items or `Criteria:` lines)",
    );
    let runnable = !plan.tasks.is_empty()
        && plan
            .tasks
            .iter()
            .all(|t| !plan.checks(&t.id).is_empty() && !t.tests.is_empty());
    let dimensions = vec![outcome, scope, constraints, success, done];
    let score = dimensions.iter().map(|d| d.score).sum();
    Clarity {
        score,
        shape: if runnable {
            Shape::Tool
        } else {
            Shape::of(score)
        },
        dimensions,
        runnable,
    }
}

/// The kind of work a plan is (the loop skill's workflows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workflow {
    /// A: choosing a library or a dependency.
    Library,
    /// B: root-causing a bug.
    Bug,
    /// Building a feature.
    Feature,
    /// C: a refactor — deletion before redesign, behaviour kept.
    Refactor,
}

impl Workflow {
    pub fn as_str(self) -> &'static str {
        match self {
            Workflow::Library => "library",
            Workflow::Bug => "bug",
            Workflow::Feature => "feature",
            Workflow::Refactor => "refactor",
        }
    }

    /// Whether the plan's words alone may choose it: a refactor only shapes the
    /// prompt. A bug's DEBUG iterations and a library's gates cost a person's time or
    /// the budget, so words only suggest them; the plan's front matter or `[run]
    /// workflow` takes them.
    pub fn taken_from_words(self) -> bool {
        matches!(self, Workflow::Feature | Workflow::Refactor)
    }

    /// What the kind of work does to a run, as a suggestion says it.
    pub fn effect(self) -> &'static str {
        match self {
            Workflow::Library => {
                "approves the plan and the finished work, and gates each new dependency"
            }
            Workflow::Bug => "spends one DEBUG iteration finding the cause before each task's fix",
            Workflow::Refactor => {
                "asks each task to delete before it redesigns, keeping what the code does"
            }
            Workflow::Feature => "builds, with no extra step",
        }
    }
}

/// The plan's kind of work, from the words of its title and goal, with the reason: a
/// suggestion, taken unasked only where [`Workflow::taken_from_words`] says so.
pub fn workflow(plan: &Plan) -> (Workflow, String) {
    let text = format!("{} {}", plan.title, plan.goal).to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    const LIBRARY: [&str; 9] = [
        "library",
        "libraries",
        "dependency",
        "dependencies",
        "choose",
        "pick",
        "evaluate",
        "compare",
        "framework",
    ];
    const BUG: [&str; 10] = [
        "bug",
        "fix",
        "crash",
        "crashes",
        "regression",
        "broken",
        "fails",
        "failing",
        "root-cause",
        "defect",
    ];
    if let Some(w) = LIBRARY.iter().find(|w| has(w)) {
        return (Workflow::Library, format!("the plan speaks of \"{w}\""));
    }
    // Adding or implementing with a dependency is choosing one, whatever the plan
    // calls itself.
    if let Some((id, how)) = plan
        .tasks
        .iter()
        .find_map(|t| adds_dependency(t).map(|how| (&t.id, how)))
    {
        return (
            Workflow::Library,
            format!("task {id} brings in a dependency ({how})"),
        );
    }
    if let Some(w) = BUG.iter().find(|w| has(w)) {
        return (Workflow::Bug, format!("the plan speaks of \"{w}\""));
    }
    const REFACTOR: [&str; 9] = [
        "refactor",
        "refactoring",
        "restructure",
        "simplify",
        "cleanup",
        "clean-up",
        "tidy",
        "deduplicate",
        "reorganize",
    ];
    if let Some(w) = REFACTOR.iter().find(|w| has(w)) {
        return (Workflow::Refactor, format!("the plan speaks of \"{w}\""));
    }
    if text.contains("clean up") || text.contains("dead code") {
        let w = if text.contains("clean up") {
            "clean up"
        } else {
            "dead code"
        };
        return (Workflow::Refactor, format!("the plan speaks of \"{w}\""));
    }
    (Workflow::Feature, "building something".into())
}

/// How task `t` brings in a dependency, if it does: a package manager's add command,
/// a manifest in its scope, or adding, using or integrating a named crate, package,
/// gem or SDK.
pub fn adds_dependency(t: &Task) -> Option<String> {
    let text = format!("{} {}", t.title, t.body).to_lowercase();
    const COMMANDS: [&str; 13] = [
        "cargo add",
        "npm install",
        "npm i ",
        "yarn add",
        "pnpm add",
        "pip install",
        "poetry add",
        "uv add",
        "go get",
        "gem install",
        "bundle add",
        "composer require",
        "dotnet add package",
    ];
    if let Some(c) = COMMANDS.iter().find(|c| text.contains(*c)) {
        return Some(format!("\"{}\"", c.trim()));
    }
    const MANIFESTS: [&str; 8] = [
        "cargo.toml",
        "package.json",
        "pyproject.toml",
        "requirements.txt",
        "go.mod",
        "gemfile",
        "pom.xml",
        "build.gradle",
    ];
    if let Some(m) = t.scope.iter().find(|s| {
        let s = s.to_lowercase();
        MANIFESTS
            .iter()
            .any(|m| s == *m || s.ends_with(&format!("/{m}")))
    }) {
        return Some(format!("its scope names {m}"));
    }
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    const VERBS: [&str; 12] = [
        "add",
        "adds",
        "adding",
        "use",
        "using",
        "integrate",
        "adopt",
        "introduce",
        "implement",
        "install",
        "vendor",
        "with",
    ];
    const THINGS: [&str; 6] = ["crate", "crates", "package", "packages", "gem", "sdk"];
    let verb = words.iter().position(|w| VERBS.contains(w))?;
    let thing = words[verb..].iter().find(|w| THINGS.contains(w))?;
    Some(format!("\"{} … {thing}\"", words[verb]))
}

/// A task's reversibility class — its `Reversibility:` line, else what its text and
/// scope speak of — with the reason.
pub fn reversibility(t: &Task) -> (Class, String) {
    if let Some(c) = t.reversibility {
        return (c, "as the plan says".into());
    }
    let text = format!("{} {} {}", t.title, t.body, t.scope.join(" ")).to_lowercase();
    const HOURS: [&str; 10] = [
        "migration",
        "schema",
        "database",
        "drop table",
        "public api",
        "release",
        "publish",
        "deploy",
        "delete data",
        "production",
    ];
    const MINUTES: [&str; 8] = [
        "dependenc",
        "config",
        "build",
        "ci ",
        "cargo.toml",
        "package.json",
        "infrastructure",
        "docker",
    ];
    if let Some(w) = HOURS.iter().find(|w| text.contains(*w)) {
        return (Class::One, format!("it speaks of \"{w}\""));
    }
    if let Some(w) = MINUTES.iter().find(|w| text.contains(*w)) {
        return (Class::TwoB, format!("it speaks of \"{}\"", w.trim()));
    }
    (Class::TwoA, "a change in code, undone by a revert".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thin_plan_is_intent_and_a_full_one_a_tool() {
        let thin = Plan::parse("P", "# P\n\n## T1: one\nVerify: t1\n").unwrap();
        let c = assess(&thin);
        assert_eq!((c.score, c.shape), (2, Shape::Intent), "{c:?}");
        assert_eq!(c.questions().len(), 4);
        let full = Plan::parse(
            "P",
            "---\nmustNot: [\"touch migrations/\"]\n---\n# Greeter\n\nA CLI that greets a person by name, with a shout mode for emphasis.\n\n## T1: Greet by name in src/greet.rs\nVerify: cargo test greet\nAcceptance:\n- [ ] greets\n",
        )
        .unwrap();
        let c = assess(&full);
        assert_eq!((c.score, c.shape), (10, Shape::Tool), "{c:?}");
        assert!(c.questions().is_empty());
    }

    /// The calibration set (docs/PLAN.md): plans as people write them, from vague to
    /// precise, and the shape each gets.
    #[test]
    fn the_scorer_against_plans_vague_reasonable_and_precise() {
        let cases = [
            // Vague: a wish, no check.
            (
                "# Make it better\n\n## T1: Improve things\nClean the code up.\n",
                0,
                Shape::Intent,
            ),
            // Vague, with a check: the agent's word is no longer all there is.
            (
                "# Speed\n\nMake it faster.\n\n## T1: Faster\nVerify: make bench\n",
                3,
                Shape::Intent,
            ),
            // Reasonable: a goal, files named, a check each, no acceptance.
            (
                "# Parser\n\nThe parser reads nested lists and reports the line of every error it finds.\n\n## T1: Nested lists in src/parse.rs\nVerify: cargo test parse\n\n## T2: Error lines in src/error.rs\nVerify: cargo test error\n",
                6,
                Shape::Colleague,
            ),
            // Reasonable, with acceptance and a constraint in words.
            (
                "# Parser\n\nThe parser reads nested lists and reports the line of every error it finds.\n\n## T1: Nested lists in src/parse.rs\nVerify: cargo test parse\nDo not change the public API.\n\nAcceptance:\n- [ ] nested lists parse\n",
                9,
                Shape::Tool,
            ),
            // Precise as the field writes them (a SWE-bench-like fix): a check and the
            // tests it must make pass, and nothing else said.
            (
                "# Fix\n\n## T1: Division\nVerify: python3 -m pytest tests/test_div.py\nTests: tests/test_div.py::test_div\n\n## T2: Powers\nVerify: python3 -m pytest tests/test_pow.py\nTests: tests/test_pow.py::*\n",
                4,
                Shape::Tool,
            ),
            // Named tests on one task of two: the other rests on its check alone.
            (
                "# Fix\n\n## T1: Division\nVerify: python3 -m pytest tests/test_div.py\nTests: tests/test_div.py::test_div\n\n## T2: Powers\nVerify: python3 -m pytest tests/test_pow.py\n",
                3,
                Shape::Intent,
            ),
        ];
        for (text, score, shape) in cases {
            let c = assess(&Plan::parse("P", text).unwrap());
            assert_eq!((c.score, c.shape), (score, shape), "{text}\n{c:?}");
        }
    }

    #[test]
    fn classes_from_what_a_task_speaks_of() {
        let mut t = Task::new("T1", "Add a migration for the users table");
        assert_eq!(reversibility(&t).0, Class::One);
        t.title = "Bump the serde dependency".into();
        assert_eq!(reversibility(&t).0, Class::TwoB);
        t.title = "Fix the greeting".into();
        assert_eq!(reversibility(&t).0, Class::TwoA);
        t.reversibility = Some(Class::One);
        assert_eq!(reversibility(&t), (Class::One, "as the plan says".into()));
    }

    #[test]
    fn work_that_brings_in_a_dependency_is_the_library_workflow() {
        let of = |task: &str| {
            let p = Plan::parse("P.md", &format!("# Greeter\n\nGreet people.\n\n{task}")).unwrap();
            workflow(&p)
        };
        for (task, why) in [
            (
                "## T1: Parse dates\nRun `cargo add chrono` and use it.\n",
                "\"cargo add\"",
            ),
            (
                "## T1: Colours\nScope: Cargo.toml, src/\n",
                "its scope names Cargo.toml",
            ),
            (
                "## T1: Add the regex crate for matching\n",
                "\"add … crate\"",
            ),
            (
                "## T1: Implement uploads with the AWS SDK\n",
                "\"implement … sdk\"",
            ),
        ] {
            let (w, reason) = of(task);
            assert_eq!(w, Workflow::Library, "{task}");
            assert_eq!(
                reason,
                format!("task T1 brings in a dependency ({why})"),
                "{task}"
            );
        }
        // Packaging a release, a module of its own: no dependency.
        for task in [
            "## T1: Package the release\n",
            "## T1: Implement the parser module in src/parse.rs\n",
        ] {
            assert_eq!(of(task).0, Workflow::Feature, "{task}");
        }
    }
}
