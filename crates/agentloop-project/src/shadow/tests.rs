use super::*;

#[test]
fn the_list_is_sorted_for_its_search() {
    assert!(STDLIB.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_new_module_named_like_one_the_checks_import() {
    for (path, module) in [
        ("src/json.py", Some("json")),
        ("json.pyc", Some("json")),
        ("pytest.pyc", Some("pytest")),
        ("json.abi3.so", Some("json")),
        ("_compression.py", Some("_compression")),
        ("json.txt", None),
        ("src/xml/__init__.py", Some("xml")),
        ("pluggy.py", Some("pluggy")),
        // A file inside a folder that is not its `__init__`: a namespace package at
        // most, which stands in only for a name no finder found.
        ("src/_pytest/junitxml.py", None),
        ("src/_pytest/__init__.py", Some("_pytest")),
        ("locale/fr/LC_MESSAGES/messages.po", None),
        ("types/index.d.ts", None),
        ("org/python/core.py", Some("org")),
        ("sitecustomize/__init__.py", Some("sitecustomize")),
        ("sitecustomize.pyc", Some("sitecustomize")),
        (
            "src/usercustomize.cpython-311-x86_64-linux-gnu.so",
            Some("usercustomize"),
        ),
        ("unittest/__init__.py", Some("unittest")),
        ("_distutils_hack.py", Some("_distutils_hack")),
        ("src/_virtualenv.py", Some("_virtualenv")),
        (
            "__editable___calc_0_1_finder.py",
            Some("__editable___calc_0_1_finder"),
        ),
        ("_distutils_hack/__init__.py", Some("_distutils_hack")),
        ("setuptools/__init__.py", Some("setuptools")),
        ("org/__init__.py", Some("org")),
        ("src/org/python/core.py", Some("org")),
        ("java.py", Some("java")),
        ("src/minicalc/_impl.py", None),
        ("__init__.py", None),
        ("src/__main__.py", None),
        ("src/minicalc/json.py", None),
        ("src/minicalc/__init__.py", None),
        ("src/mul.py", None),
        ("README.md", None),
        ("docs/json.py", None),
    ] {
        assert_eq!(
            shadowed_module(path, &Shadowable::default()).as_deref(),
            module,
            "{path}"
        );
    }
}

#[test]
fn what_the_interpreter_took_from_outside_the_tree_or_looked_for_there_is_learned() {
    let saw = PythonNames {
        imported: [
            ("reportlib", "/opt/lib/reportlib.py"),
            ("_distutils_hack", "/opt/lib/_distutils_hack/__init__.py"),
            ("yaml", "/opt/lib/yaml/__init__.py"),
            ("google", "/opt/lib/google/"),
            ("json", "/usr/lib/python3.11/json/__init__.py"),
            ("calc", "/copy/src/calc/__init__.py"),
            ("test_calc", "/copy/tests/test_calc.py"),
            (
                "vendored",
                "/copy/.venv/lib/python3.11/site-packages/vendored.py",
            ),
            ("embedded", ""),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect(),
        missing: [
            ("speedups", "/opt/lib/reportlib.py"),
            ("fastpath", "/copy/src/calc/__init__.py"),
            ("optional_x", "/copy/tests/test_calc.py"),
            ("nobody_knows", ""),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect(),
        path: ["/copy/tests", "/copy", "/copy/src", "/usr/lib/python3.11"]
            .into_iter()
            .chain(["/copy/.venv/lib/python3.11/site-packages", "/elsewhere"])
            .map(String::from)
            .collect(),
    };
    let learned = learn(&saw, Path::new("/copy"));
    let names: Vec<&str> = learned.names.keys().map(String::as_str).collect();
    // The standard library is known without asking; the project's own modules,
    // and the names its own code looked for, are its to add.
    assert_eq!(
        names,
        [
            "_distutils_hack",
            "embedded",
            "google",
            "nobody_knows",
            "reportlib",
            "speedups",
            "vendored",
            "yaml"
        ]
    );
    assert_eq!(
        learned.names["speedups"].to_string(),
        "looked for by /opt/lib/reportlib.py"
    );
    let dirs: Vec<&str> = learned.dirs.iter().map(String::as_str).collect();
    assert_eq!(dirs, ["", "src", "tests"]);
    for (path, module) in [
        (
            "reportlib.py",
            Some("reportlib, imported from /opt/lib/reportlib.py"),
        ),
        (
            "src/speedups/__init__.py",
            Some("speedups, looked for by /opt/lib/reportlib.py"),
        ),
        (
            "tests/reportlib.py",
            Some("reportlib, imported from /opt/lib/reportlib.py"),
        ),
        ("tests/json.py", Some("json")),
        ("tests/_helpers.py", None),
        // What the baseline taught stands for the private names' rule.
        ("_helpers.py", None),
        (
            "_distutils_hack.py",
            Some("_distutils_hack, imported from /opt/lib/_distutils_hack/__init__.py"),
        ),
        ("yaml/deploy.yaml", None),
        (
            "google/protobuf/__init__.py",
            Some("google, a namespace package imported from /opt/lib/google/"),
        ),
        (
            "src/speedups/core.py",
            Some("speedups, looked for by /opt/lib/reportlib.py"),
        ),
        ("lib/reportlib.py", None),
        ("fastpath.py", None),
        ("src/calc/reportlib.py", None),
        ("tests/test_new.py", None),
    ] {
        assert_eq!(shadowed_module(path, &learned).as_deref(), module, "{path}");
    }
}

#[test]
fn a_new_module_that_python_would_take_before_one_of_the_tree() {
    let tree = ["conftest.py", "pkg/__init__.py", "pkg/util.py", "calc.py"];
    let exists = |p: &str| tree.contains(&p);
    for (path, displaced) in [
        ("conftest/__init__.py", Some("conftest.py")),
        (
            "conftest.cpython-311-x86_64-linux-gnu.so",
            Some("conftest.py"),
        ),
        (
            "pkg/__init__.cpython-311-x86_64-linux-gnu.so",
            Some("pkg/__init__.py"),
        ),
        ("pkg/util.abi3.so", Some("pkg/util.py")),
        ("pkg/util/__init__.py", Some("pkg/util.py")),
        ("calc/__init__.pyc", Some("calc.py")),
        // Source before bytecode; a module of a new name; a namespace package.
        ("calc.pyc", None),
        ("pkg/new.so", None),
        ("pkg/util/helper.py", None),
        ("conftest.py", None),
        ("README.md", None),
    ] {
        assert_eq!(
            displaces(path, exists),
            displaced.map(|d| format!("it would be imported in place of {d}")),
            "{path}"
        );
    }
}
