//! A check's command read as the shell would: whether it is one simple command, which
//! test runner it starts (a package script's, too), and the command again with the
//! runner's arguments added.

use std::path::Path;

use super::Runner;

/// Whether `command` may start a test runner agentloop reads (a package script may:
/// which runner it starts is known only in the project).
pub fn may_be_runner(command: &str) -> bool {
    recognise(command, None).is_some()
}

/// The runner `command` starts when run in `workdir`, following the package scripts
/// it names (`npm test` whose script runs `npm run mocha`), if agentloop reads it.
pub fn runner_in(command: &str, workdir: &Path) -> Option<Runner> {
    recognise(command, Some(workdir)).map(|f| f.runner)
}

/// A command recognised: its words and where the runner's own arguments begin.
pub(super) struct Found {
    pub(super) runner: Runner,
    pub(super) words: Vec<String>,
    /// Words up to and including the runner and its subcommand (`python3 -m pytest`,
    /// `cargo nextest run`, `go test`).
    pub(super) program_end: usize,
    /// `npm test` and the like: the runner is in a package.json script; arguments go
    /// through the package manager.
    pub(super) via_script: bool,
    /// How the package managers pass arguments on, outermost first (`--` for npm;
    /// `npm test` whose script runs `npm run unit` needs two).
    pass_through: Vec<&'static str>,
}

impl Found {
    /// The package managers' separators still to add after the command's own `--`s,
    /// which count for the outermost managers.
    fn separators_left(&self) -> impl Iterator<Item = &'static str> + '_ {
        let given = self.words[self.program_end.min(self.words.len())..]
            .iter()
            .filter(|w| *w == "--")
            .count();
        self.pass_through.iter().skip(given).copied()
    }

    /// The command with `args` added where the runner reads them (before a `--` that
    /// ends its own options).
    pub(super) fn with_args(&self, args: &[String]) -> Option<String> {
        let mut words = self.words.clone();
        if self.via_script {
            words.extend(self.separators_left().map(str::to_string));
            words.extend(args.iter().cloned());
            return join(&words);
        }
        let at = match self.runner {
            // `go test` flags come before the packages.
            Runner::GoTest => self.program_end,
            _ => words[self.program_end..]
                .iter()
                .position(|w| w == "--")
                .map(|i| i + self.program_end)
                .unwrap_or(words.len()),
        };
        words.splice(at..at, args.iter().cloned());
        join(&words)
    }

    /// `dir` put last on the `PYTHONPATH` the command's own words set
    /// (`PYTHONPATH=src pytest`): theirs would replace the one agentloop gives.
    pub(super) fn python_path_after(&mut self, dir: &Path) {
        for w in self.words.iter_mut().take_while(|w| is_assignment(w)) {
            if let Some(value) = w.strip_prefix("PYTHONPATH=") {
                *w = if value.is_empty() {
                    format!("PYTHONPATH={}", dir.display())
                } else {
                    format!("PYTHONPATH={value}:{}", dir.display())
                };
            }
        }
    }
}

/// The words as one shell command, each quoted only where it needs it.
pub(super) fn join(words: &[String]) -> Option<String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(safe) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect();
    (!words.iter().any(|w| w.contains('\0'))).then(|| quoted.join(" "))
}

/// Which runner `command` starts, if it is one simple command.
pub(super) fn recognise(command: &str, workdir: Option<&Path>) -> Option<Found> {
    // Anything the shell would treat as more than one command, or expand, is run as
    // written.
    if !simple(command) {
        return None;
    }
    let words = shlex::split(command)?;
    let start = words
        .iter()
        .position(|w| !is_assignment(w))
        .unwrap_or(words.len());
    let (runner, end) = program(&words[start..])?;
    let found = Found {
        runner,
        words: words.clone(),
        program_end: start + end,
        via_script: false,
        pass_through: Vec::new(),
    };
    if runner != Runner::Jest || !is_package_manager(&words[start]) {
        return Some(found);
    }
    // `npm test`, `yarn test`, `pnpm run unit`: the script says which runner (and
    // without the project at hand, it may be one).
    match workdir {
        Some(w) => script_runner(&words, start, w, 0),
        None => Some(found),
    }
}

/// Whether the shell would read `command` as one command with literal words: no
/// operator, redirection, expansion or escape outside single quotes.
fn simple(command: &str) -> bool {
    let (mut single, mut double) = (false, false);
    for c in command.chars() {
        match c {
            '\'' if !double => single = !single,
            _ if single => {}
            '"' => double = !double,
            '$' | '`' | '\\' | '\n' => return false,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' if !double => return false,
            _ => {}
        }
    }
    !single && !double
}

/// How deep package scripts may call each other (`npm test` → `npm run unit` → …)
/// before the chain is taken for a loop.
const SCRIPT_DEPTH: usize = 4;

/// `npm test` and the like, when the script's last command is a JavaScript runner,
/// directly or through the package scripts it runs in turn (`npm run lint && npm run
/// mocha`).
fn script_runner(words: &[String], start: usize, workdir: &Path, depth: usize) -> Option<Found> {
    let pm = words[start].rsplit('/').next().unwrap_or("");
    // The script's name: the words after the manager, up to a `--` and its arguments.
    let rest: Vec<&String> = words[start + 1..]
        .iter()
        .take_while(|w| *w != "--")
        .collect();
    let name = match rest.as_slice() {
        [t] if *t == "test" || *t == "t" => "test",
        [run, s] if *run == "run" || *run == "run-script" => s.as_str(),
        [s] if pm != "npm" => s.as_str(),
        _ => return None,
    };
    if depth >= SCRIPT_DEPTH {
        return None;
    }
    let text = std::fs::read_to_string(workdir.join("package.json")).ok()?;
    let pkg: serde_json::Value = serde_json::from_str(&text).ok()?;
    let script = pkg.get("scripts")?.get(name)?.as_str()?;
    let last = script.rsplit("&&").next()?.trim();
    let inner_words = shlex::split(last)?;
    let at = inner_words.iter().position(|w| !is_assignment(w))?;
    let exec = inner_words.get(at + 1).is_some_and(|w| w == "exec");
    let inner = if is_package_manager(&inner_words[at]) && !exec && simple(last) {
        script_runner(&inner_words, at, workdir, depth + 1)?
    } else {
        recognise(last, None)?
    };
    if !matches!(inner.runner, Runner::Jest | Runner::Vitest | Runner::Mocha) {
        return None;
    }
    // The script's own `--` already passes arguments on for the managers inside it.
    // npm needs one; pnpm only after its `test` shorthand (`pnpm test --json` is
    // refused as pnpm's own unknown option, while `pnpm run test -- --json` hands the
    // `--` on to the runner, which takes what follows for test paths); yarn none.
    let mut pass_through: Vec<&'static str> = Vec::new();
    if pm == "npm" || (pm == "pnpm" && name == "test" && rest.len() == 1) {
        pass_through.push("--");
    }
    pass_through.extend(inner.separators_left());
    Some(Found {
        runner: inner.runner,
        words: words.to_vec(),
        program_end: start + 1 + rest.len(),
        via_script: true,
        pass_through,
    })
}

fn is_package_manager(w: &str) -> bool {
    matches!(w.rsplit('/').next(), Some("npm" | "yarn" | "pnpm"))
}

/// `NAME=value` before the program.
pub(super) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The runner the words start, and how many words name it (with its subcommand).
fn program(words: &[String]) -> Option<(Runner, usize)> {
    let base = |i: usize| words.get(i).map(|w| w.rsplit('/').next().unwrap_or(w));
    let first = base(0)?;
    // Wrappers that run a program in the project's environment.
    if matches!(first, "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye")
        && base(1) == Some("run")
    {
        return program(&words[2..]).map(|(r, n)| (r, n + 2));
    }
    if first == "bundle" && base(1) == Some("exec") {
        return program(&words[2..]).map(|(r, n)| (r, n + 2));
    }
    if first == "npx" || (matches!(first, "pnpm" | "yarn") && base(1) == Some("exec")) {
        let skip = if first == "npx" { 1 } else { 2 };
        let flags = words[skip..]
            .iter()
            .take_while(|w| w.starts_with('-'))
            .count();
        let (r, n) = program(&words[skip + flags..])?;
        return matches!(r, Runner::Jest | Runner::Vitest | Runner::Mocha)
            .then_some((r, n + skip + flags));
    }
    let is_python = |w: &str| {
        w == "python"
            || w.strip_prefix("python")
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    Some(match first {
        "pytest" | "py.test" => (Runner::Pytest, 1),
        p if is_python(p) && base(1) == Some("-m") && base(2) == Some("pytest") => {
            (Runner::Pytest, 3)
        }
        "cargo" => {
            // `cargo +nightly test`: a toolchain first.
            let off = usize::from(words.get(1).is_some_and(|w| w.starts_with('+')));
            match (base(1 + off), base(2 + off)) {
                (Some("nextest"), Some("run")) => (Runner::Nextest, 3 + off),
                (Some("test"), _) => (Runner::CargoTest, 2 + off),
                _ => return None,
            }
        }
        "go" if base(1) == Some("test") => (Runner::GoTest, 2),
        "jest" => (Runner::Jest, 1),
        "vitest" => (Runner::Vitest, 1),
        "mocha" | "_mocha" => (Runner::Mocha, 1),
        "rspec" => (Runner::Rspec, 1),
        "mvn" | "mvnw" => {
            // Surefire runs in the test phase and every phase after it.
            let phases = ["test", "package", "verify", "install", "deploy"];
            if !words[1..].iter().any(|w| phases.contains(&w.as_str())) {
                return None;
            }
            (Runner::Maven, 1)
        }
        "gradle" | "gradlew" => {
            let tasks = ["test", "check", "build"];
            if !words[1..]
                .iter()
                .any(|w| tasks.contains(&w.rsplit(':').next().unwrap_or(w)))
            {
                return None;
            }
            (Runner::Gradle, 1)
        }
        // `npm test`, `yarn test`: which runner is the script's business.
        "npm" | "yarn" | "pnpm" => (Runner::Jest, 1),
        _ => return None,
    })
}
