//! The projects people have, made the way people make them, each taken as a new
//! user would: `agentloop init`, `plan check --baseline`, then `run --yes` with a
//! scripted agent. A src-layout Python package installed editable into the project's
//! `.venv`, a flat package tested through tox, a Go module with several packages, a
//! Node package whose `npm test` runs lint and then jest through nested scripts. Each
//! ends SHIP with no hand edit to what `init` wrote and no gate opened; an agent that
//! does nothing gets nothing done, with the failing test's own message on the console.

use crate::support::*;

/// `plan check --baseline`, then `run --yes` with `flags`: SHIP, exit 0, no gate.
pub(crate) fn ships(p: &Project, flags: &[&str]) {
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let mut args = vec!["run", "--yes", "--no-wait"];
    args.extend(flags);
    let r = p.run(&args);
    let s = p.status();
    assert_eq!(r.code, Some(0), "{}\n{}\n{s:#}", r.stdout, r.stderr);
    assert_eq!(s["verdict"], "SHIP", "{s:#}\n{}", r.stderr);
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    assert!(
        !journal.contains("\"kind\":\"gate_opened\""),
        "no gate opens for an honest fix: {}",
        r.stderr
    );
}

/// The Python `python3 -c` reports, as `X.Y`.
fn python_version() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A `.venv` in the project, as `python3 -m venv .venv && pip install -e .` leaves
/// it: the project's `src/` on its path through a `.pth` file (how an editable
/// install reaches the working tree), and pytest from the suite's tools. Its `bin`
/// goes first on the agent's and the checks' PATH, as an activated venv's does.
fn editable_venv(p: &mut Project) {
    let venv = p.path().join(".venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python3 -m venv (python3-venv)");
    let v = python_version();
    let site = venv.join(format!("lib/python{v}/site-packages"));
    let pytest_site = tools().join(format!("pytest/lib/python{v}/site-packages"));
    assert!(pytest_site.is_dir(), "{}", pytest_site.display());
    std::fs::write(
        site.join("suite_tools.pth"),
        format!("{}\n", pytest_site.display()),
    )
    .unwrap();
    std::fs::write(
        site.join("__editable__.minicalc-0.1.0.pth"),
        format!("{}\n", p.path().join("src").display()),
    )
    .unwrap();
    p.env.push((
        "PATH".into(),
        format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    ));
}

/// A src-layout package, its `.venv` ignored.
fn minicalc() -> Project {
    let p = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"minicalc\"\nversion = \"0.1.0\"\n\n[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        )
        .file("src/minicalc/__init__.py", "def add(a, b):\n    return a + b\n")
        .file(
            "tests/test_add.py",
            "from minicalc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .file(
            "tests/test_mul.py",
            "def test_mul():\n    from minicalc.mul import mul\n    assert mul(2, 3) == 6\n",
        )
        .file(
            "tests/test_div.py",
            "def test_div():\n    from minicalc.div import div\n    assert div(6, 3) == 2\n",
        )
        .build();
    p.write(".gitignore", ".agentloop/\n.venv/\n");
    p.commit("ignore the venv");
    p
}

#[test]
fn a_src_layout_package_installed_editable_is_judged_on_the_tree_the_check_runs_in() {
    let mut p = minicalc();
    editable_venv(&mut p);
    let config = init_with_scripted(
        &p,
        "# Minicalc\n\n## T1: Multiplication\n\nAdd `mul(a, b)` in src/minicalc/mul.py.\n\nVerify: python3 -m pytest tests/test_mul.py\nTests: tests/test_mul.py::test_mul\n\n## T2: Division\n\nAdd `div(a, b)` in src/minicalc/div.py.\n\nVerify: python3 -m pytest tests/test_div.py\nTests: tests/test_div.py::test_div\n",
        "case \"$task\" in\nT1) printf 'def mul(a, b):\\n    return a * b\\n' > src/minicalc/mul.py ;;\nT2) printf 'def div(a, b):\\n    return a / b\\n' > src/minicalc/div.py ;;\nesac\necho TASK_COMPLETE\n",
    );
    assert!(config.contains("\"python3 -m pytest\""), "{config}");
    // Each task's agent works in a worktree of its own: the editable install points at
    // the user's tree, which has neither module until the work is merged.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
    // `src/` comes first on Python's path in the checks, ahead of what is installed: a
    // new module there named like one pytest imports waits for a person.
    let mut p = minicalc();
    editable_venv(&mut p);
    init_with_scripted(
        &p,
        "# Minicalc\n\n## T1: Multiplication\n\nAdd `mul(a, b)` in src/minicalc/mul.py.\n\nVerify: python3 -m pytest tests/test_mul.py\nTests: tests/test_mul.py::test_mul\n",
        "printf 'def mul(a, b):\\n    return 0\\n' > src/minicalc/mul.py\nprintf 'def hookimpl(*a, **k):\\n    pass\\n' > src/pluggy.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{s:#}");
    assert_eq!(s["surface_changes"][0]["path"], "src/pluggy.py", "{s:#}");
}

const TEXTKIT_TESTS: [(&str, &str); 2] = [
    (
        "tests/test_words.py",
        "import textkit\n\ndef test_words():\n    assert textkit.words('a b') == ['a', 'b']\n",
    ),
    (
        "tests/test_slug.py",
        "import textkit\n\ndef test_slug():\n    assert textkit.slug('Hello World') == 'hello-world', 'the slug of a title'\n\ndef test_slug_trims():\n    assert textkit.slug('  Hello  World ') == 'hello-world'\n",
    ),
];

/// A flat package whose tests run through tox (`tox.ini`, `setup.cfg`); tox is not
/// installed, pytest is.
fn textkit() -> Project {
    let mut s = Scratch::new()
        .file(
            "tox.ini",
            "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands =\n    pytest {posargs} tests\n",
        )
        .file("setup.cfg", "[metadata]\nname = textkit\nversion = 0.1\n\n[options]\npackages = textkit\n")
        .file("textkit/__init__.py", "def words(s):\n    return s.split()\n");
    for (rel, text) in TEXTKIT_TESTS {
        s = s.file(rel, text);
    }
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    p
}

const TEXTKIT_PLAN: &str = "# Textkit\n\nSlugs for titles.\n\n## T1: Slugs\n\nAdd `slug(title)` to textkit/__init__.py.\n\nVerify: python3 -m pytest tests/test_slug.py\nTests: tests/test_slug.py::*\n";

#[test]
fn a_flat_package_tested_through_tox_is_judged_by_the_pytest_tox_runs() {
    let p = textkit();
    let config = init_with_scripted(
        &p,
        TEXTKIT_PLAN,
        "printf '\\ndef slug(title):\\n    return \"-\".join(title.lower().split())\\n' >> textkit/__init__.py\necho TASK_COMPLETE\n",
    );
    assert!(
        config.contains("\"python3 -m pytest tests\",  # from tox.ini [testenv] commands: read test by test (pytest)"),
        "{config}"
    );
    assert!(!config.contains("\"tox\""), "{config}");
    // With three workers (on the integration branch: the tree stays as it was), then
    // in the tree itself.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
    // An agent that claims the work and does none gets nothing done, and the console
    // says which test failed and how.
    let p = textkit();
    init_with_scripted(&p, TEXTKIT_PLAN, "echo TASK_COMPLETE\n");
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}");
    assert!(
        r.stderr.contains("tests/test_slug.py::test_slug"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("has no attribute 'slug'"),
        "the failing test's own message: {}",
        r.stderr
    );
    // One that does half the work: the test it left failing is named.
    let p = textkit();
    init_with_scripted(
        &p,
        TEXTKIT_PLAN,
        "printf '\\ndef slug(title):\\n    return title.lower().replace(\" \", \"-\")\\n' >> textkit/__init__.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_ne!(p.status()["tasks"][0]["status"], "done");
    assert!(
        r.stderr.contains(
            "1 of the tests it must make pass is not passing (tests/test_slug.py::test_slug_trims: failed)"
        ),
        "{}",
        r.stderr
    );
}

/// A Go module with two packages; tasks say `Verify: go test ./reverse/`.
fn strs() -> Project {
    Scratch::new()
        .file("go.mod", "module example.com/strs\n\ngo 1.19\n")
        .file(
            "reverse/reverse.go",
            "package reverse\n\n// Reverse returns s backwards.\nfunc Reverse(s string) string {\n\treturn s\n}\n",
        )
        .file(
            "reverse/reverse_test.go",
            "package reverse\n\nimport \"testing\"\n\nfunc TestReverse(t *testing.T) {\n\tif got := Reverse(\"abc\"); got != \"cba\" {\n\t\tt.Fatalf(\"Reverse(abc) = %q\", got)\n\t}\n}\n",
        )
        .file(
            "upper/upper.go",
            "package upper\n\nimport \"strings\"\n\nfunc Upper(s string) string { return strings.ToUpper(s) }\n",
        )
        .file(
            "upper/upper_test.go",
            "package upper\n\nimport \"testing\"\n\nfunc TestUpper(t *testing.T) {\n\tif Upper(\"a\") != \"A\" {\n\t\tt.Fatal(\"upper\")\n\t}\n}\n",
        )
        .build()
}

const STRS_PLAN: &str = "# Strings\n\n## T1: Reverse\n\nMake `Reverse` in reverse/reverse.go reverse its string.\n\nVerify: go test ./reverse/\nTests: example.com/strs/reverse::TestReverse\n";

const REVERSE: &str = "cat > reverse/reverse.go <<'EOF'\npackage reverse\n\n// Reverse returns s backwards.\nfunc Reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}\nEOF\n";

#[test]
fn a_go_module_with_several_packages_protects_the_tests_not_the_package() {
    let p = strs();
    let config = init_with_scripted(&p, STRS_PLAN, &format!("{REVERSE}echo TASK_COMPLETE\n"));
    assert!(config.contains("\"go test ./...\""), "{config}");
    // The package `go test ./reverse/` names is the work: changing reverse.go waits
    // for nobody.
    // The task's `go test ./reverse/` is a part of `go test ./...`: read from its run
    // at the baseline, not run again.
    let r = p.run(&["plan", "check", "--baseline"]);
    assert!(
        r.stderr
            .contains("running 3 checks (1 more read from their runs) on a clean copy"),
        "{}",
        r.stderr
    );
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
    // An agent that weakens the test instead waits for a person, who sees which file.
    let p = strs();
    init_with_scripted(
        &p,
        STRS_PLAN,
        "sed -i 's/!= \"cba\"/== \"never\"/' reverse/reverse_test.go\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{s:#}");
    assert_eq!(
        s["surface_changes"][0]["path"], "reverse/reverse_test.go",
        "{s:#}"
    );
    // One that breaks the other package while it does the work is not done: the
    // test that passed before is named.
    let p = strs();
    init_with_scripted(
        &p,
        STRS_PLAN,
        &format!(
            "{REVERSE}sed -i 's/strings.ToUpper(s)/strings.ToLower(s)/' upper/upper.go\necho TASK_COMPLETE\n"
        ),
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_ne!(p.status()["verdict"], "SHIP");
    assert!(
        r.stderr.contains("1 test that passed before fails now (example.com/strs/upper::TestUpper: failed) — upper_test.go:7: upper"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_node_package_whose_npm_test_runs_lint_then_jest_is_read_test_by_test() {
    let p = Scratch::new()
        .file(
            "package.json",
            "{\"name\": \"calc\", \"private\": true, \"scripts\": {\"test\": \"npm run lint && npm run unit\", \"lint\": \"node lint.js\", \"unit\": \"jest\"}}\n",
        )
        .file("lint.js", "// The project's own lint: no tabs in src/.\nconst fs = require('fs');\nfor (const f of fs.readdirSync('src')) {\n  if (fs.readFileSync('src/' + f, 'utf8').includes('\\t')) { console.error(f + ': a tab'); process.exit(1); }\n}\n")
        .file(
            "src/calc.js",
            "exports.add = (a, b) => a + b;\nexports.div = (a, b) => 0;\n",
        )
        .file(
            "test/calc.test.js",
            "const c = require('../src/calc');\ntest('adds', () => expect(c.add(2, 3)).toBe(5));\ntest('divides', () => expect(c.div(6, 3)).toBe(2));\n",
        )
        .build();
    p.write(".gitignore", ".agentloop/\nnode_modules\n");
    p.commit("ignore node_modules");
    // `npm install` as the user ran it: the suite's runners.
    std::os::unix::fs::symlink(
        tools().join("js/node_modules"),
        p.path().join("node_modules"),
    )
    .unwrap();
    let config = init_with_scripted(
        &p,
        "# Calc\n\n## T1: Division\n\nImplement `div` in src/calc.js.\n\nTests: test/calc.test.js::divides\n",
        "sed -i 's/exports.div = (a, b) => 0;/exports.div = (a, b) => a \\/ b;/' src/calc.js\necho TASK_COMPLETE\n",
    );
    assert!(
        config.contains("\"npm test\",  # from package.json: read test by test (jest)"),
        "{config}"
    );
    assert!(config.contains("\ncarry = [\"node_modules\"]"), "{config}");
    // Without the carry the clean copy has no jest: said so, not "names match no test".
    let carried = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        carried.replace("\ncarry = [\"node_modules\"]", "\n"),
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`npm test` did not start in the clean copy: node_modules is not there (git ignores it, and the copy holds what git tracks); add it to `[verify] carry = [\"node_modules\"]`"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("names match no test"), "{}", r.stderr);
    p.write("agentloop.toml", carried);
    // With three workers (on the integration branch: the tree stays as it was), then
    // in the tree itself.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
}

#[test]
fn an_npm_workspace_judges_the_package_the_task_changed_not_the_users() {
    let p = Scratch::new()
        .file(
            "package.json",
            "{\"name\": \"mono\", \"private\": true, \"workspaces\": [\"packages/*\"], \"scripts\": {\"test\": \"jest\"}}\n",
        )
        .file(
            "packages/util/package.json",
            "{\"name\": \"@acme/util\", \"version\": \"1.0.0\", \"main\": \"index.js\"}\n",
        )
        .file("packages/util/index.js", "exports.double = (n) => n;\n")
        .file(
            "packages/app/package.json",
            "{\"name\": \"@acme/app\", \"version\": \"1.0.0\"}\n",
        )
        .file(
            "packages/app/test/app.test.js",
            "const { double } = require('@acme/util');\ntest('doubles', () => expect(double(2)).toBe(4));\ntest('zero', () => expect(double(0)).toBe(0));\n",
        )
        .build();
    p.write(".gitignore", ".agentloop/\nnode_modules\n");
    p.commit("ignore node_modules");
    // `npm install` as a workspace leaves it: the dependencies, and each workspace
    // package linked in.
    let modules = p.path().join("node_modules");
    std::fs::create_dir_all(modules.join("@acme")).unwrap();
    for e in std::fs::read_dir(tools().join("js/node_modules"))
        .unwrap()
        .flatten()
    {
        std::os::unix::fs::symlink(e.path(), modules.join(e.file_name())).unwrap();
    }
    for pkg in ["util", "app"] {
        std::os::unix::fs::symlink(
            format!("../../packages/{pkg}"),
            modules.join("@acme").join(pkg),
        )
        .unwrap();
    }
    let config = init_with_scripted(
        &p,
        "# Util\n\n## T1: Double\n\nMake `double` in packages/util/index.js double its number.\n\nTests: packages/app/test/app.test.js::doubles\n",
        "sed -i 's/(n) => n;/(n) => n * 2;/' packages/util/index.js\necho TASK_COMPLETE\n",
    );
    assert!(config.contains("\ncarry = [\"node_modules\"]"), "{config}");
    // The task's agent works in a worktree of its own; node_modules/@acme/util in the
    // user's tree still holds the old `double`.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
}

#[test]
fn a_layout_the_checks_cannot_be_made_hermetic_in_is_named_at_plan_check() {
    let p = Scratch::new()
        .plan("# Ws\n\n## T1: A\nVerify: test -f a.txt\n")
        .file(
            "crates/util/Cargo.toml",
            "[package]\nname = \"util\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .file("crates/util/src/lib.rs", "pub fn one() -> u32 { 1 }\n")
        .build();
    let util = p.path().canonicalize().unwrap().join("crates/util");
    p.write(
        "Cargo.toml",
        format!(
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nutil = {{ path = \"{}\" }}\n",
            util.display()
        ),
    );
    p.commit("an absolute path");
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the checks would read your working tree, not the tree judged:")
            && r.stderr.contains(&format!(
                "Cargo.toml:7: the dependency path {} is absolute, into the project: make it relative (`path = \"crates/util\"`)",
                util.display()
            )),
        "{}",
        r.stderr
    );
    assert!(
        !p.path().join(".agentloop/runs").exists(),
        "nothing is written"
    );
    p.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nutil = { path = \"crates/util\" }\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn a_cargo_workspace_of_two_crates_reaches_ship_on_inits_checks() {
    let p = Scratch::new()
        .file(
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
        )
        .file(
            "crates/ops/Cargo.toml",
            "[package]\nname = \"ops\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .file(
            "crates/ops/src/lib.rs",
            "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\npub fn mul(_a: i64, _b: i64) -> i64 {\n    todo!(\"multiplication\")\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn add_works() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn mul_works() {\n        assert_eq!(super::mul(3, 4), 12);\n    }\n}\n",
        )
        .file(
            "crates/app/Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nops = { path = \"../ops\" }\n",
        )
        .file(
            "crates/app/src/lib.rs",
            "pub fn total(xs: &[i64]) -> i64 {\n    xs.iter().fold(0, |a, x| ops::add(a, *x))\n}\n",
        )
        .file(
            "crates/app/tests/total.rs",
            "#[test]\nfn totals() {\n    assert_eq!(app::total(&[1, 2, 3]), 6);\n}\n",
        )
        .build();
    p.write(".gitignore", ".agentloop/\ntarget/\n");
    p.commit("ignore target");
    let mut p = p;
    // The crates build in a target directory of their own (not the suite's), kept
    // between checks; the suite may run under nextest's `ci` profile, which they have not.
    let target = p.cache.path().join("cargo-target");
    p.env
        .push(("CARGO_TARGET_DIR".into(), target.display().to_string()));
    p.env.push(("NEXTEST_PROFILE".into(), "default".into()));
    let config = init_with_scripted(
        &p,
        "# Ops\n\n## T1: Multiplication\n\nImplement `mul` in crates/ops/src/lib.rs.\n\nTests: tests::mul_works\n",
        "sed -i 's/todo!(\"multiplication\")/_a * _b/' crates/ops/src/lib.rs\necho TASK_COMPLETE\n",
    );
    assert!(
        config.contains("\"cargo test\",  # from Cargo.toml: read test by test (cargo test)"),
        "{config}"
    );
    // With three workers (on the integration branch: the tree stays as it was), then
    // in the tree itself.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
}

#[test]
fn a_makefile_project_whose_tests_print_tap_is_read_test_by_test() {
    let p = Scratch::new()
        .file("Makefile", "test:\n\tsh tests/run.sh\n\n.PHONY: test\n")
        .file(
            "lib/calc.sh",
            "add() { echo $(($1 + $2)); }\nmul() { echo 0; }\n",
        )
        .file(
            "tests/run.sh",
            ". ./lib/calc.sh\necho 'TAP version 13'\necho '1..2'\nif [ \"$(add 2 3)\" = 5 ]; then echo 'ok 1 - add'; else echo 'not ok 1 - add'; fi\nif [ \"$(mul 2 3)\" = 6 ]; then echo 'ok 2 - mul'; else echo 'not ok 2 - mul'; echo '  ---'; echo \"  message: 'mul 2 3 gave $(mul 2 3)'\"; echo '  ...'; exit 1; fi\n",
        )
        .build();
    let config = init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nImplement `mul` in lib/calc.sh.\n\nTests: mul\n",
        "sed -i 's/mul() { echo 0; }/mul() { echo $(($1 * $2)); }/' lib/calc.sh\necho TASK_COMPLETE\n",
    );
    assert!(config.contains("\"make test\""), "{config}");
    let r = p.run(&["plan", "check", "--baseline"]);
    assert!(
        r.stdout.contains("`make test` — tap (its output): 2 tests"),
        "{}",
        r.stdout
    );
    // With three workers (on the integration branch: the tree stays as it was), then
    // in the tree itself.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
    // An agent that does nothing: the test's own message, from its YAML block.
    let p = Scratch::new()
        .file("Makefile", "test:\n\tsh tests/run.sh\n")
        .file("lib/calc.sh", "add() { echo $(($1 + $2)); }\nmul() { echo 0; }\n")
        .file(
            "tests/run.sh",
            ". ./lib/calc.sh\necho '1..2'\necho 'ok 1 - add'\necho 'not ok 2 - mul'\necho '  ---'\necho \"  message: 'mul 2 3 gave $(mul 2 3)'\"\necho '  ...'\nexit 1\n",
        )
        .build();
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nImplement `mul`.\n\nTests: mul\n",
        "echo TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("(mul: failed) — mul 2 3 gave 0"),
        "{}",
        r.stderr
    );
}

/// A test file the runner collected though nothing names it a test (pytest told to
/// collect `*_cases.py`): the baseline learns it from pytest's report, shows it, and
/// holds an agent that weakens it for a person.
#[test]
fn a_test_the_runner_collected_is_protected_whatever_its_name() {
    let s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npython_files = [\"*_cases.py\"]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return 0\n")
        .file(
            "checks/calc_cases.py",
            "import calc\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
        );
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nTests: checks/calc_cases.py::test_mul\n",
        "sed -i 's/assert calc.mul(2, 3) == 6/assert True/' checks/calc_cases.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert!(r.stdout.contains("in 1 test file"), "{}", r.stdout);
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{s:#}");
    assert_eq!(
        s["surface_changes"][0]["path"], "checks/calc_cases.py",
        "{s:#}"
    );
    let surface = s["tests_baseline"]["surface"].as_array().unwrap();
    assert!(
        surface.iter().any(|f| f["path"] == "checks/calc_cases.py"
            && f["why"] == "a test `python3 -m pytest` collected at the test baseline"),
        "{s:#}"
    );
    assert_eq!(
        s["tests_baseline"]["checks"][0]["runner"], "pytest",
        "{s:#}"
    );
}
