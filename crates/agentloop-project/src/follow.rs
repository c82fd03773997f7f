//! The wrappers a project runs its tests through, followed to the commands inside
//! them: `tox.ini`'s `[testenv] commands`, a noxfile's `session.run("pytest")`, a
//! Makefile's `test` recipe, a justfile's, and the package scripts an `npm test` runs
//! in turn. What
//! a wrapper runs is what `init` writes, so the check is a runner agentloop can read
//! test by test instead of one exit code.

use std::path::Path;

/// One command found inside a wrapper, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inside {
    pub command: String,
    pub from: String,
}

/// The commands of `tox.ini`'s `[testenv]`, as they run outside tox: pytest as
/// `python3 -m pytest`, `{posargs}` left out (`{posargs:tests}` as `tests`), lines
/// tox lets fail and `pip install` lines dropped. `None` when there is no such list,
/// or it uses a substitution that only tox can make.
pub fn tox(dir: &Path) -> Option<Vec<Inside>> {
    let text = std::fs::read_to_string(dir.join("tox.ini")).ok()?;
    let lines = ini_value(&text, "testenv", "commands")?;
    let mut found = Vec::new();
    for line in lines {
        if line.starts_with('-') || line.starts_with("pip ") || line.contains("-m pip ") {
            continue;
        }
        let line = substitute(&line)?;
        let command = as_runner(&line).unwrap_or(line);
        found.push(Inside {
            command,
            from: "tox.ini [testenv] commands".to_string(),
        });
    }
    (!found.is_empty()).then_some(found)
}

/// The lines of `key` in `[section]` of an INI file: the value on the key's own line
/// and the indented lines that continue it, comments and blank lines left out.
fn ini_value(text: &str, section: &str, key: &str) -> Option<Vec<String>> {
    let mut in_section = false;
    let mut in_key = false;
    let mut lines = Vec::new();
    for raw in text.lines() {
        let trimmed = raw.trim();
        if trimmed.starts_with('[') {
            if in_key {
                break;
            }
            in_section = trimmed.trim_start_matches('[').trim_end_matches(']').trim() == section;
            continue;
        }
        if !in_section {
            continue;
        }
        let continues = raw.starts_with([' ', '\t']);
        if in_key && !continues && !trimmed.is_empty() {
            break;
        }
        if in_key {
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                lines.push(trimmed.to_string());
            }
            continue;
        }
        if let Some((k, v)) = trimmed.split_once('=')
            && k.trim() == key
        {
            in_key = true;
            let v = v.trim();
            if !v.is_empty() {
                lines.push(v.to_string());
            }
        }
    }
    in_key.then_some(lines)
}

/// A tox command line with the substitutions made that mean the same outside tox.
fn substitute(line: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}')? + open;
        let inner = &rest[open + 1..close];
        match inner.split_once(':') {
            _ if inner == "posargs" => {}
            Some(("posargs", default)) => out.push_str(default),
            _ if inner == "toxinidir" => out.push('.'),
            _ if inner == "envpython" => out.push_str("python3"),
            _ => return None,
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    let words = shlex::split(&out)?;
    (!words.is_empty()).then(|| words.join(" "))
}

/// A line that runs pytest, as `python3 -m pytest` with its arguments: `pytest`,
/// `py.test`, `python -m pytest`, `coverage run -m pytest`.
fn as_runner(line: &str) -> Option<String> {
    let words = shlex::split(line)?;
    let args_at = match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["pytest" | "py.test", ..] => 1,
        ["python" | "python3", "-m", "pytest", ..] => 3,
        ["coverage", "run", "-m", "pytest", ..] => 4,
        _ => return None,
    };
    let mut out = vec![
        "python3".to_string(),
        "-m".to_string(),
        "pytest".to_string(),
    ];
    out.extend(words[args_at..].iter().cloned());
    Some(out.join(" "))
}

/// Whether the noxfile runs pytest in a session (`session.run("pytest", …)` or
/// `session.run("python", "-m", "pytest", …)`).
pub fn nox_runs_pytest(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("noxfile.py")) else {
        return false;
    };
    text.lines().any(|l| {
        let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
        l.contains("session.run(") && (l.contains("\"pytest\"") || l.contains("'pytest'"))
    })
}

/// Make targets defined in the Makefile (`name:` at the start of a line), each with
/// the lines of its recipe.
pub fn make_targets(dir: &Path) -> Recipes {
    let Ok(text) = std::fs::read_to_string(dir.join("Makefile")) else {
        return Vec::new();
    };
    let mut targets: Recipes = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            if let Some(i) = current {
                targets[i].1.push(recipe.trim().to_string());
            }
            continue;
        }
        current = None;
        let Some((name, _)) = line.split_once(':') else {
            continue;
        };
        if !name.is_empty()
            && !line.contains(":=")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            targets.push((name.to_string(), Vec::new()));
            current = Some(targets.len() - 1);
        }
    }
    targets
}

/// Recipes or make targets: each name with the lines of its body.
pub type Recipes = Vec<(String, Vec<String>)>;

/// The justfile's recipes (`justfile`, `Justfile` or `.justfile`), each with the
/// lines of its body, and the file's name.
pub fn just_recipes(dir: &Path) -> Option<(&'static str, Recipes)> {
    let (name, text) = ["justfile", "Justfile", ".justfile"]
        .into_iter()
        .find_map(|n| std::fs::read_to_string(dir.join(n)).ok().map(|t| (n, t)))?;
    let mut recipes: Recipes = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(i) = current
                && !line.trim().is_empty()
            {
                recipes[i].1.push(line.trim().to_string());
            }
            continue;
        }
        current = None;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('[') || t.contains(":=") {
            continue;
        }
        let Some((head, _)) = t.split_once(':') else {
            continue;
        };
        // `test *args:` → `test`; a leading `@` keeps the recipe quiet.
        let recipe = head
            .trim_start_matches('@')
            .split_whitespace()
            .next()
            .unwrap_or("");
        if !recipe.is_empty()
            && recipe
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            recipes.push((recipe.to_string(), Vec::new()));
            current = Some(recipes.len() - 1);
        }
    }
    Some((name, recipes))
}

/// The one command a justfile recipe's body runs, when it is a plain command (no
/// `{{…}}`, no shell operator).
pub fn just_recipe_command(body: &[String]) -> Option<String> {
    if body.iter().any(|l| l.contains("{{")) {
        return None;
    }
    make_recipe_command(body)
}

/// The one command a make target's recipe runs, when it is a plain command (no make
/// variable, no shell operator): `@pytest -q tests` → `pytest -q tests`, pytest as
/// `python3 -m pytest`.
pub fn make_recipe_command(recipe: &[String]) -> Option<String> {
    let [line] = recipe else {
        return None;
    };
    let line = line.trim_start_matches(['@', '-', '+']).trim();
    if line.is_empty() || line.contains('$') || line.contains(['&', '|', ';', '>', '<', '`']) {
        return None;
    }
    Some(as_runner(line).unwrap_or_else(|| line.to_string()))
}

/// The package scripts an npm/pnpm/yarn script runs in turn (`npm run lint && npm
/// run mocha` names `lint` and `mocha`), and the programs every one of them starts,
/// up to a depth that ends a script calling itself.
pub fn script_chain(scripts: &serde_json::Map<String, serde_json::Value>, name: &str) -> Chain {
    let mut chain = Chain::default();
    walk(scripts, name, 0, &mut chain);
    chain
}

/// What [`script_chain`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub scripts: Vec<String>,
    pub programs: Vec<String>,
}

fn walk(
    scripts: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    depth: usize,
    chain: &mut Chain,
) {
    if depth > 4 || chain.scripts.iter().any(|s| s == name) {
        return;
    }
    let Some(text) = scripts.get(name).and_then(|s| s.as_str()) else {
        return;
    };
    chain.scripts.push(name.to_string());
    for part in text.split(['&', '|', ';']) {
        let Some(words) = shlex::split(part.trim()) else {
            continue;
        };
        let mut words = words
            .into_iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'));
        let Some(first) = words.next() else {
            continue;
        };
        let rest: Vec<String> = words.collect();
        let program = first.rsplit('/').next().unwrap_or(&first).to_string();
        match (program.as_str(), rest.first().map(String::as_str)) {
            ("npm" | "pnpm" | "yarn", Some("run" | "run-script")) => {
                if let Some(s) = rest.get(1) {
                    walk(scripts, s, depth + 1, chain);
                }
            }
            ("npm" | "pnpm" | "yarn", Some("test" | "t")) => {
                walk(scripts, "test", depth + 1, chain)
            }
            ("npm" | "pnpm" | "yarn", Some("exec")) | ("npx", _) => {
                if let Some(p) = rest.iter().find(|w| *w != "exec" && !w.starts_with('-')) {
                    chain.programs.push(p.clone());
                }
            }
            ("pnpm" | "yarn", Some(s)) if scripts.contains_key(s) => {
                walk(scripts, s, depth + 1, chain)
            }
            _ => chain.programs.push(program),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn tox_commands_as_they_run_outside_tox() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "tox.ini",
            "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands =\n    pip install -e .\n    pytest {posargs:tests} -q\n    # a comment\n    - coverage report\n    flake8 {toxinidir}/src\n\n[testenv:docs]\ncommands = sphinx-build docs out\n",
        );
        let found: Vec<String> = tox(d.path())
            .unwrap()
            .into_iter()
            .map(|i| i.command)
            .collect();
        assert_eq!(found, ["python3 -m pytest tests -q", "flake8 ./src"]);
        write(
            d.path(),
            "tox.ini",
            "[testenv]\ncommands = python -m pytest {posargs}\n",
        );
        assert_eq!(tox(d.path()).unwrap()[0].command, "python3 -m pytest");
        write(
            d.path(),
            "tox.ini",
            "[testenv]\ncommands = pytest --basetemp={envtmpdir}\n",
        );
        assert_eq!(tox(d.path()), None, "a substitution only tox makes");
        write(d.path(), "tox.ini", "[tox]\nenvlist = py3\n");
        assert_eq!(tox(d.path()), None);
    }

    #[test]
    fn a_make_recipe_of_one_plain_command() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "Makefile",
            "PY := python3\nbuild:\n\tcc -o x x.c\ntest: build\n\t@pytest -q tests\nlint:\n\t$(PY) -m flake8\ncheck:\n\tcd t && ./run\n",
        );
        let targets = make_targets(d.path());
        let names: Vec<&str> = targets.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(names, ["build", "test", "lint", "check"]);
        assert_eq!(
            make_recipe_command(&targets[1].1).as_deref(),
            Some("python3 -m pytest -q tests")
        );
        assert_eq!(make_recipe_command(&targets[2].1), None, "a make variable");
        assert_eq!(make_recipe_command(&targets[3].1), None, "two commands");
    }

    #[test]
    fn a_justfile_recipe_of_one_plain_command() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "justfile",
            "set shell := [\"bash\", \"-c\"]\n# the tests\ntest *args:\n    pytest -q {{args}}\n\n[private]\nlint:\n    @ruff check .\n\nbuild: lint\n    cargo build\n    cargo doc\n",
        );
        let (file, recipes) = just_recipes(d.path()).unwrap();
        assert_eq!(file, "justfile");
        let names: Vec<&str> = recipes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["test", "lint", "build"]);
        assert_eq!(just_recipe_command(&recipes[0].1), None, "an interpolation");
        assert_eq!(
            just_recipe_command(&recipes[1].1).as_deref(),
            Some("ruff check .")
        );
        assert_eq!(just_recipe_command(&recipes[2].1), None, "two commands");
        write(d.path(), "justfile", "test:\n  go test ./...\n");
        let (_, recipes) = just_recipes(d.path()).unwrap();
        assert_eq!(
            just_recipe_command(&recipes[0].1).as_deref(),
            Some("go test ./...")
        );
    }

    #[test]
    fn a_script_chain_is_walked_to_the_programs_it_starts() {
        let scripts: serde_json::Value = serde_json::from_str(
            r#"{"test": "npm run lint && npm run mocha", "lint": "eslint .", "mocha": "NODE_ENV=test mocha --timeout 2000 test/", "loop": "npm run loop", "e2e": "npx playwright test"}"#,
        )
        .unwrap();
        let scripts = scripts.as_object().unwrap();
        let chain = script_chain(scripts, "test");
        assert_eq!(chain.scripts, ["test", "lint", "mocha"]);
        assert_eq!(chain.programs, ["eslint", "mocha"]);
        assert_eq!(
            script_chain(scripts, "loop").scripts,
            ["loop"],
            "a script calling itself ends"
        );
        assert_eq!(script_chain(scripts, "e2e").programs, ["playwright"]);
    }
}
