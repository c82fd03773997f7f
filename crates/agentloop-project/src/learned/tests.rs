use super::*;

struct Files(BTreeMap<&'static str, (u32, &'static str)>);

impl Files {
    fn new(files: &[(&'static str, &'static str)]) -> Files {
        Files(
            files
                .iter()
                .map(|(p, t)| {
                    let mode = if t.starts_with("#!") {
                        0o100755
                    } else {
                        0o100644
                    };
                    (*p, (mode, *t))
                })
                .collect(),
        )
    }

    fn learn(&self, checks: &[Check<'_>], gap: Option<&str>) -> ProjectModel {
        self.learn_all(checks, gap, &[])
    }

    fn learn_with(&self, checks: &[Check<'_>], tasks: &[String]) -> ProjectModel {
        self.learn_all(checks, None, tasks)
    }

    fn learn_all(&self, checks: &[Check<'_>], gap: Option<&str>, tasks: &[String]) -> ProjectModel {
        let paths: BTreeSet<&str> = self.0.keys().copied().collect();
        let mode = |p: &str| self.0.get(p).map(|f| f.0);
        let text = |p: &str| self.0.get(p).map(|f| f.1.as_bytes().to_vec());
        let tree = Tree {
            paths: &paths,
            mode: &mode,
            text: &text,
        };
        learn(checks, &BTreeMap::new(), &tree, gap, tasks)
    }
}

fn roles(m: &ProjectModel) -> Vec<(&str, Role)> {
    m.files.iter().map(|(p, f)| (p.as_str(), f.role)).collect()
}

#[test]
fn a_python_project_is_learned_from_pytests_report_and_what_it_opened() {
    let files = Files::new(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\naddopts = \"-p support.fakes -p no:cacheprovider\"\n",
        ),
        (
            "conftest.py",
            "import calc\npytest_plugins = [\n    \"support.clock\",\n]\n",
        ),
        ("support/__init__.py", ""),
        ("support/fakes.py", "def fake(): pass\n"),
        ("support/clock.py", "def now(): return 0\n"),
        ("calc/__init__.py", "def add(a, b): return a + b\n"),
        ("tests/test_calc.py", "import calc\n"),
        ("tests/helpers.py", "def same(a, b): return a == b\n"),
        ("tests/data.json", "{}"),
        ("scripts/test_release.py", "print('release')\n"),
        ("bin/run", "#!/bin/sh\nexit 0\n"),
    ]);
    let read: Vec<String> = [
        "pyproject.toml",
        "conftest.py",
        "support/__init__.py",
        "support/fakes.py",
        "support/clock.py",
        "calc/__init__.py",
        "tests/test_calc.py",
        "tests/helpers.py",
        "tests/data.json",
        "bin/run",
    ]
    .map(String::from)
    .to_vec();
    let collected: BTreeSet<String> = ["tests/test_calc.py".to_string()].into();
    let checks = [Check {
        command: "python3 -m pytest",
        reported: Some("pytest"),
        errored: false,
        read: &read,
        collected: &collected,
    }];
    let m = files.learn(&checks, None);
    assert_eq!(
        roles(&m),
        [
            ("bin/run", Role::Program),
            ("calc/__init__.py", Role::Work),
            ("conftest.py", Role::Config),
            ("pyproject.toml", Role::Config),
            ("support/__init__.py", Role::Work),
            ("support/clock.py", Role::Plugin),
            ("support/fakes.py", Role::Plugin),
            ("tests/data.json", Role::Support),
            ("tests/helpers.py", Role::Support),
            ("tests/test_calc.py", Role::Test),
        ]
    );
    assert_eq!(
        m.files["support/clock.py"].how,
        "loaded by name (`support.clock`) from conftest.py"
    );
    assert_eq!(
        m.files["support/fakes.py"].how,
        "loaded by name (`support.fakes`) from pyproject.toml"
    );
    assert!(m.names_stand_in.is_empty());
    // Named like a test, never opened: no test of these checks.
    assert_eq!(
        m.not_tests.iter().collect::<Vec<_>>(),
        ["scripts/test_release.py"]
    );
    // With a partial trace, names stand in and nothing is taken off the tests.
    let m = files.learn(&checks, Some("too many files opened at once"));
    assert!(m.not_tests.is_empty());
    assert_eq!(m.names_stand_in.len(), 1, "{:?}", m.names_stand_in);
}

#[test]
fn a_jest_configuration_loads_setup_files_and_mapped_modules_not_coverage_globs() {
    let files = Files::new(&[
        (
            "jest.config.js",
            "module.exports = {\n  setupFiles: ['./jest.setup.js'],\n  testEnvironment: '<rootDir>/test/env',\n  moduleNameMapper: { '\\\\.css$': '<rootDir>/mocks/style.js' },\n  collectCoverageFrom: ['src/index.js'],\n  roots: ['<rootDir>/src'],\n};\n",
        ),
        ("jest.setup.js", ""),
        ("test/env.js", ""),
        ("mocks/style.js", ""),
        ("src/index.js", ""),
        ("src/index.test.js", ""),
        (
            "package.json",
            "{\"name\": \"x\", \"main\": \"src/index.js\", \"mocha\": {\"require\": \"./mocha.setup.js\"}}",
        ),
        ("mocha.setup.js", ""),
    ]);
    let read: Vec<String> = ["jest.config.js", "package.json", "src/index.js"]
        .map(String::from)
        .to_vec();
    let collected: BTreeSet<String> = ["src/index.test.js".to_string()].into();
    let checks = [Check {
        command: "npx jest",
        reported: Some("jest"),
        errored: false,
        read: &read,
        collected: &collected,
    }];
    let m = files.learn(&checks, None);
    assert_eq!(
        roles(&m),
        [
            ("jest.config.js", Role::Config),
            ("jest.setup.js", Role::Plugin),
            ("mocha.setup.js", Role::Plugin),
            ("package.json", Role::Config),
            ("src/index.js", Role::Work),
            ("src/index.test.js", Role::Test),
            ("test/env.js", Role::Plugin),
        ],
        "the coverage glob, the module mapping and `main` name the work, not a plugin"
    );
}

#[test]
fn a_check_without_a_report_leaves_its_tests_to_names() {
    let files = Files::new(&[("check.sh", "sh x\n")]);
    let read = vec!["check.sh".to_string()];
    let none = BTreeSet::new();
    let checks = [Check {
        command: "sh check.sh",
        reported: None,
        errored: false,
        read: &read,
        collected: &none,
    }];
    let m = files.learn(&checks, None);
    assert_eq!(roles(&m), [("check.sh", Role::Program)]);
    assert_eq!(
        m.names_stand_in,
        ["`sh check.sh` gave no per-test report: the tests it runs are known by their names"]
    );
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn words_of_the_model_and_of_dash_p() {
    assert_eq!(dash_p(&words("pytest -p a.b -pc -p no:x -p")), ["a.b", "c"]);
    assert!(runs_pytest(&words("python3 -m pytest -q")));
    assert!(!runs_pytest(&words("mypy -p mypkg")));
    assert_eq!(
        addopts_plugins(
            "pyproject.toml",
            "[project]\nname = \"x\"\n[tool.pytest.ini_options]\naddopts = [\"-p\", \"fakes\"]\n[tool.mypy]\naddopts = \"-p other\"\n"
        ),
        ["fakes"]
    );
    assert_eq!(
        addopts_plugins(
            "tox.ini",
            "[testenv]\ncommands = mypy -p pkg\n[pytest]\naddopts =\n    -q\n    -p one\n"
        ),
        ["one"]
    );
    assert_eq!(pytest_plugins("pytest_plugins = 'one'\n"), ["one"]);
    assert_eq!(
        pytest_plugins("    pytest_plugins: list[str] = [\"a\"]\npytest_plugins += [\"b\"]\n"),
        ["a", "b"]
    );
    assert_eq!(
        yaml_loaders(
            "spec: test/**/*.js\nrequire:\n  - test/setup.js\n  - 'chai/register-expect'\nfile: test/hooks.js\n"
        ),
        ["test/setup.js", "chai/register-expect", "test/hooks.js"]
    );
    // A character of more than one byte before a key is no place to cut the text.
    assert_eq!(last_key("\u{a0}setupFiles: ["), Some("setupFiles"));
    assert_eq!(last_key("// 例（x）: ["), None);
    assert_eq!(
        pytest_plugins("pytest_plugins = (\n  \"a.b\",\n  'c',\n)\nx = 'd'\n"),
        ["a.b", "c"]
    );
    assert_eq!(last_key("{ roots: ['a', "), Some("roots"));
    assert_eq!(last_key("{ \"setupFiles\": ["), Some("setupFiles"));
}

#[test]
fn a_module_named_by_dash_p_is_looked_for_where_pytest_imports_from_not_anywhere() {
    let files = Files::new(&[
        ("pytest.ini", "[pytest]\naddopts = -p helpers\n"),
        ("tests/conftest.py", ""),
        ("tests/helpers.py", ""),
        ("src/pkg/helpers.py", ""),
        ("tox.ini", "[testenv]\ncommands = mypy -p src\n"),
        ("src/__init__.py", ""),
    ]);
    let read: Vec<String> = ["pytest.ini", "tests/conftest.py", "tox.ini"]
        .map(String::from)
        .to_vec();
    let none = BTreeSet::new();
    let checks = [Check {
        command: "mypy -p src && pytest",
        reported: Some("pytest"),
        errored: false,
        read: &read,
        collected: &none,
    }];
    let m = files.learn(&checks, None);
    let plugins: Vec<&str> = m
        .files
        .iter()
        .filter(|(_, f)| f.role == Role::Plugin)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(plugins, ["tests/helpers.py"], "{m:#?}");
}

#[test]
fn a_test_file_stays_one_unless_every_check_ran_whole_and_no_task_names_it() {
    let files = Files::new(&[
        ("tests/test_a.py", ""),
        ("pkg/test_support.py", ""),
        ("web/button.test.js", ""),
        ("util/strings_test.go", ""),
    ]);
    let read: Vec<String> = vec!["tests/test_a.py".into()];
    let collected: BTreeSet<String> = ["tests/test_a.py".to_string()].into();
    let check = |reported, errored| Check {
        command: "pytest",
        reported,
        errored,
        read: &read,
        collected: &collected,
    };
    let m = files.learn(&[check(Some("pytest"), false)], None);
    assert_eq!(
        m.not_tests.iter().collect::<Vec<_>>(),
        ["pkg/test_support.py", "util/strings_test.go"],
        "a JavaScript runner may stop before a file: it stays a test"
    );
    // An import error (pytest -x stops collecting there), or a check with no report.
    assert!(
        files
            .learn(&[check(Some("pytest"), true)], None)
            .not_tests
            .is_empty()
    );
    assert!(
        files
            .learn(&[check(None, false)], None)
            .not_tests
            .is_empty()
    );
    // A file a task names stays a test.
    let m = files.learn_with(
        &[check(Some("pytest"), false)],
        &["Fix the helpers in pkg/test_support.py".to_string()],
    );
    assert_eq!(
        m.not_tests.iter().collect::<Vec<_>>(),
        ["util/strings_test.go"]
    );
}
