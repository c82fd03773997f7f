//! The part of a file that configures the checks when only a part does: the test
//! scripts of `package.json` (and every script they run, followed), the test sections
//! of `pyproject.toml`, `setup.cfg`, `tox.ini` and `Cargo.toml`, and what in git's own
//! configuration runs code (filters, drivers, hooks, includes).

use std::collections::BTreeSet;

/// The keys of `package.json` besides its test scripts that change what the checks do.
/// `bin` and `directories` say which programs the package itself provides (with a
/// `bin` that is one path, `name` names it): `npx jest` runs the local package's own
/// `jest` before `node_modules/.bin`'s (the stop-78 attack's `"bin": {"jest":
/// "tools/fj.js"}` wrote a passing report and ran no test).
const PACKAGE_KEYS: &[&str] = &[
    "bin",
    "directories",
    "jest",
    "mocha",
    "ava",
    "vitest",
    "tap",
    "c8",
    "nyc",
    "jest-junit",
    "babel",
    "imports",
    "exports",
    "main",
    "type",
    "eslintConfig",
    "prettier",
    "stylelint",
];

/// The part of a sectioned file that configures the checks (its whole text for any
/// other file). Two versions with the same section are the same to the checks.
pub fn check_section(path: &str, text: &[u8]) -> Vec<u8> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let text = String::from_utf8_lossy(text);
    // No file at all is a file with no section.
    let text = match name {
        "package.json" if text.trim().is_empty() => "{}".into(),
        _ => text,
    };
    let picked = match name {
        "package.json" => serde_json::from_str::<serde_json::Value>(&text)
            .map(|v| {
                // Every test script (`test`, `test:unit`, `pretest…`, `posttest…`) and
                // every script those run, followed to the end.
                let scripts = v["scripts"].as_object().cloned().unwrap_or_default();
                let tests: serde_json::Map<String, serde_json::Value> = test_scripts(&scripts)
                    .into_iter()
                    .filter_map(|k| Some((k.clone(), scripts.get(&k)?.clone())))
                    .collect();
                // The runners' own keys, what jest's Babel reads, how Node resolves
                // and loads the package's modules (`imports` maps `#x` to any file),
                // and the linters a test script may run.
                let mut picked = serde_json::Map::new();
                picked.insert("scripts".into(), tests.into());
                for k in PACKAGE_KEYS {
                    picked.insert(k.to_string(), v[k].clone());
                }
                if v["bin"].is_string() {
                    picked.insert("name".into(), v["name"].clone());
                }
                serde_json::Value::Object(picked).to_string()
            })
            .unwrap_or_else(|_| text.to_string()),
        // Which targets are tests and how they run (`[lib] test = false`, a `[[test]]`
        // without the harness, a build script).
        "Cargo.toml" => text
            .parse::<toml::Table>()
            .map(|t| {
                let package = t.get("package").and_then(|p| p.as_table());
                let pick = |k: &str| package.and_then(|p| p.get(k)).map(|v| v.to_string());
                format!(
                    "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
                    t.get("lib").map(|v| v.to_string()),
                    t.get("test").map(|v| v.to_string()),
                    t.get("bin").map(|v| v.to_string()),
                    t.get("bench").map(|v| v.to_string()),
                    t.get("example").map(|v| v.to_string()),
                    pick("build"),
                    pick("autotests"),
                    pick("autolib"),
                )
            })
            .unwrap_or_else(|_| text.to_string()),
        "pyproject.toml" => text
            .parse::<toml::Table>()
            .map(|t| {
                let tool = t.get("tool").and_then(|t| t.as_table());
                let pick = |k: &str| tool.and_then(|t| t.get(k)).map(|v| v.to_string());
                format!(
                    "{:?}{:?}{:?}",
                    pick("pytest"),
                    pick("tox"),
                    pick("coverage")
                )
            })
            .unwrap_or_else(|_| text.to_string()),
        "setup.cfg" | "tox.ini" => ini_sections(&text, |s| {
            s == "pytest" || s == "tool:pytest" || s == "tox" || s.starts_with("testenv")
        }),
        "config" if path == GIT_CONFIG => git_config_section(&text),
        _ => return text.into_owned().into_bytes(),
    };
    picked.into_bytes()
}

/// The project's git configuration, as the surface names it.
pub const GIT_CONFIG: &str = ".git/config";

/// The names of `scripts` a test run starts: every `test*`, `pretest*` and `posttest*`
/// script, and every script one of those runs (`npm run X`, `npm X`, `yarn X`,
/// `pnpm X`, `npm-run-all X`, `run-s X`), transitively.
fn test_scripts(scripts: &serde_json::Map<String, serde_json::Value>) -> BTreeSet<String> {
    let mut found: BTreeSet<String> = scripts
        .keys()
        .filter(|k| k.starts_with("test") || k.starts_with("pretest") || k.starts_with("posttest"))
        .cloned()
        .collect();
    let mut todo: Vec<String> = found.iter().cloned().collect();
    while let Some(k) = todo.pop() {
        let Some(body) = scripts.get(&k).and_then(|b| b.as_str()) else {
            continue;
        };
        for word in body.split(|c: char| c.is_whitespace() || "&|;()'\"".contains(c)) {
            // Any word naming another script may run it (`npm run lint`, `yarn lint`,
            // `run-p lint build`): a word too many costs only a stricter section.
            let name = word.trim();
            if name.is_empty() || found.contains(name) || !scripts.contains_key(name) {
                continue;
            }
            found.insert(name.to_string());
            todo.push(name.to_string());
            // npm runs `preX` and `postX` around `X`.
            for hook in [format!("pre{name}"), format!("post{name}")] {
                if scripts.contains_key(&hook) && found.insert(hook.clone()) {
                    todo.push(hook);
                }
            }
        }
    }
    found
}

/// What in git's configuration runs code or changes what git shows: filters, diff
/// and merge drivers, hooks, includes, aliases, `core.*` programs and attributes.
/// Remotes, branches and the user's name are not the checks' business.
fn git_config_section(text: &str) -> String {
    ini_sections(text, |s| {
        let name = s.split(['"', ' ']).next().unwrap_or(s).to_ascii_lowercase();
        matches!(
            name.as_str(),
            "core"
                | "filter"
                | "diff"
                | "merge"
                | "include"
                | "includeif"
                | "alias"
                | "hook"
                | "uploadpack"
                | "credential"
                | "gpg"
                | "sequence"
        )
    })
}

/// What Python's `str.splitlines` ends a line at.
const PY_LINE_ENDS: [char; 10] = [
    '\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}',
];

/// The lines of the sections `keep` takes, read so that no reader of the file sees
/// more of them than this does: a header is a line whose first character is `[`, its
/// name up to the first `]` (iniconfig, which pytest uses, drops a `; comment` after
/// it) or the last one (configparser); either name kept keeps the section. An
/// indented `[…]` line never ends a kept section (configparser may read it as a value
/// going on), and comment lines are dropped only when nothing could read them.
fn ini_sections(text: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let mut on = false;
    // Lines as pytest's reader (iniconfig: `str.splitlines`, a byte-order mark
    // dropped) takes them: a bare `\r`, a form feed or U+2028 ends one too — a file of
    // such lines is one line to `str::lines` (the stop-78 attacks' `tox.ini`s).
    for line in text.trim_start_matches('\u{feff}').split(PY_LINE_ENDS) {
        let t = line.trim();
        if let Some(after) = line.strip_prefix('[') {
            let first = after.split(']').next().unwrap_or(after);
            let last = after.rsplit_once(']').map_or(after, |(h, _)| h);
            on = keep(first.trim()) || keep(last.trim());
        } else if !on && t.starts_with('[') {
            let s = t.trim_start_matches('[');
            on = keep(s.split(']').next().unwrap_or(s).trim());
        }
        if on && !t.is_empty() && !t.starts_with('#') && !t.starts_with(';') {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_test_section_of_a_sectioned_file_counts() {
        let a = br#"{"name":"x","dependencies":{"a":"1"},"scripts":{"test":"jest","build":"tsc"}}"#;
        let b =
            br#"{"name":"x","dependencies":{"a":"2"},"scripts":{"test":"jest","build":"esbuild"}}"#;
        let c = br#"{"name":"x","scripts":{"test":"exit 0"}}"#;
        assert_eq!(
            check_section("package.json", a),
            check_section("package.json", b)
        );
        assert_ne!(
            check_section("package.json", a),
            check_section("package.json", c)
        );
        let d = br#"{"name":"x","scripts":{"test":"jest","test:unit":"node forge.js && exit 0 && jest"}}"#;
        // What jest's Babel reads, and where `#calc` resolves to, are the checks'.
        for e in [
            &br##"{"name":"x","scripts":{"test":"jest","build":"tsc"},"babel":{"plugins":["./fix.js"]}}"##[..],
            br##"{"name":"x","scripts":{"test":"jest","build":"tsc"},"imports":{"#calc":"./stub.js"}}"##,
        ] {
            assert_ne!(check_section("package.json", a), check_section("package.json", e));
        }
        // A new package.json with no test section has none, as no file has.
        assert_eq!(
            check_section("package.json", br#"{"name":"x","version":"1.0.0"}"#),
            check_section("package.json", b"")
        );
        assert_ne!(
            check_section("package.json", a),
            check_section("package.json", d),
            "every test script counts"
        );
        let c1 = b"[package]\nname = 'x'\nversion = '1.0.0'\n";
        let c2 = b"[package]\nname = 'x'\nversion = '1.1.0'\n[dependencies]\nregex = '1'\n";
        let c3 = b"[package]\nname = 'x'\nversion = '1.0.0'\n[lib]\ntest = false\n[[test]]\nname = 'it'\nharness = false\n";
        assert_eq!(
            check_section("Cargo.toml", c1),
            check_section("Cargo.toml", c2)
        );
        assert_ne!(
            check_section("Cargo.toml", c1),
            check_section("Cargo.toml", c3)
        );
        let p1 = b"[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='-q'\n";
        let p2 = b"[project]\nname='y'\n[tool.pytest.ini_options]\naddopts='-q'\n";
        let p3 = b"[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='-p evil'\n";
        assert_eq!(
            check_section("pyproject.toml", p1),
            check_section("pyproject.toml", p2)
        );
        assert_ne!(
            check_section("pyproject.toml", p1),
            check_section("pyproject.toml", p3)
        );
        let s1 = b"[metadata]\nname=x\n[tool:pytest]\naddopts=-q\n";
        let s2 = b"[metadata]\nname=y\n[tool:pytest]\naddopts=-q\n";
        assert_eq!(
            check_section("setup.cfg", s1),
            check_section("setup.cfg", s2)
        );
        // A header with a comment after it is still the section (as iniconfig reads
        // it), and an indented header does not end it.
        let s3 = b"[metadata]\nname=x\n[tool:pytest] ; the tests\naddopts=-q\n";
        let s4 = b"[metadata]\nname=x\n[tool:pytest] ; the tests\naddopts=-p evil\n";
        assert_ne!(
            check_section("setup.cfg", s3),
            check_section("setup.cfg", s4)
        );
        let s5 = b"[tool:pytest]\naddopts=-q\n  [x]\n  -p evil\n";
        assert_ne!(
            check_section("setup.cfg", s1),
            check_section("setup.cfg", s5)
        );
    }

    #[test]
    fn an_ini_files_lines_end_where_pythons_do() {
        let none = check_section("tox.ini", b"");
        for text in [
            "# settings\r[pytest]\raddopts = -p x\r",
            "\u{feff}[pytest]\naddopts = -p x\n",
            "# settings\u{0c}[pytest]\u{0c}addopts = -p x\n",
            "# settings\u{0b}[pytest]\u{0b}addopts = -p x\n",
            "# settings\u{85}[pytest]\u{85}addopts = -p x\n",
            "# settings\u{2028}[pytest]\u{2028}addopts = -p x\n",
        ] {
            assert_ne!(check_section("tox.ini", text.as_bytes()), none, "{text:?}");
        }
    }

    #[test]
    fn the_programs_a_package_provides_are_part_of_its_checks() {
        let was = br#"{"name":"g","scripts":{"test":"jest"}}"#;
        for now in [
            &br#"{"name":"g","bin":{"jest":"tools/fj.js"},"scripts":{"test":"jest"}}"#[..],
            br#"{"name":"jest","bin":"tools/fj.js","scripts":{"test":"jest"}}"#,
            br#"{"name":"g","directories":{"bin":"tools"},"scripts":{"test":"jest"}}"#,
        ] {
            assert_ne!(
                check_section("package.json", was),
                check_section("package.json", now),
                "{}",
                String::from_utf8_lossy(now)
            );
        }
        // With a `bin` that is one path, the program is the package's name.
        assert_ne!(
            check_section("package.json", br#"{"name":"g","bin":"tools/fj.js"}"#),
            check_section("package.json", br#"{"name":"jest","bin":"tools/fj.js"}"#)
        );
    }
}
