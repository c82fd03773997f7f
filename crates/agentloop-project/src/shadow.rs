//! A new Python module that would stand in for one the checks import. The checks put
//! the judged tree's `src/` (or, under `python -m`, its root) on Python's path ahead of
//! the standard library and the installed packages, so a new `src/json.py`,
//! `src/pluggy.py` or root `xml/` would run the agent's code inside the judge, in
//! place of the module the runner or the tests meant. Only new files count: a
//! project's own package that happens to share a name is its code.

use std::collections::BTreeSet;
use std::sync::OnceLock;

/// What pytest and its usual plugins import that is not the standard library.
const RUNNER_MODULES: &[&str] = &[
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "exceptiongroup",
    "tomli",
    "colorama",
    "py",
    "attr",
    "attrs",
    "hypothesis",
    "coverage",
    "xdist",
    "execnet",
    "pytest_cov",
    "pytest_mock",
    "pytest_asyncio",
    "typing_extensions",
    "pygments",
];

/// The standard library's top-level modules when `python3` cannot say
/// (`sys.stdlib_module_names`): the ones a runner or a test surely imports.
const STDLIB_FALLBACK: &[&str] = &[
    "abc",
    "argparse",
    "ast",
    "asyncio",
    "atexit",
    "base64",
    "builtins",
    "codecs",
    "collections",
    "concurrent",
    "configparser",
    "contextlib",
    "copy",
    "copyreg",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "dis",
    "doctest",
    "email",
    "encodings",
    "enum",
    "errno",
    "faulthandler",
    "fnmatch",
    "functools",
    "gc",
    "genericpath",
    "glob",
    "hashlib",
    "heapq",
    "html",
    "http",
    "importlib",
    "inspect",
    "io",
    "itertools",
    "json",
    "keyword",
    "linecache",
    "locale",
    "logging",
    "marshal",
    "math",
    "multiprocessing",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "pdb",
    "pickle",
    "pkgutil",
    "platform",
    "posixpath",
    "pprint",
    "queue",
    "random",
    "re",
    "reprlib",
    "runpy",
    "select",
    "selectors",
    "shlex",
    "shutil",
    "signal",
    "site",
    "socket",
    "sqlite3",
    "ssl",
    "stat",
    "string",
    "struct",
    "subprocess",
    "sys",
    "sysconfig",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "token",
    "tokenize",
    "tomllib",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "weakref",
    "xml",
    "zipfile",
    "zipimport",
    "zlib",
];

fn shadowable() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let asked = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys; print('\\n'.join(sorted(sys.stdlib_module_names)))",
            ])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let stdlib: Vec<String> = match asked {
            Some(text) if !text.trim().is_empty() => text.lines().map(str::to_string).collect(),
            _ => STDLIB_FALLBACK.iter().map(|s| s.to_string()).collect(),
        };
        stdlib
            .into_iter()
            .chain(RUNNER_MODULES.iter().map(|s| s.to_string()))
            .collect()
    })
}

/// The module a new file at `path` would shadow, if it would: a top-level module or
/// package of the project's root or of `src/`.
pub fn shadowed_module(path: &str) -> Option<String> {
    let rest = path.strip_prefix("src/").unwrap_or(path);
    let first = rest.split('/').next()?;
    let name = if rest.contains('/') {
        first
    } else {
        first
            .strip_suffix(".py")
            .or_else(|| first.split_once(".cpython-").map(|(n, _)| n))
            .or_else(|| first.strip_suffix(".so"))?
    };
    shadowable().contains(name).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_module_named_like_one_the_checks_import() {
        for (path, module) in [
            ("src/json.py", Some("json")),
            ("src/xml/__init__.py", Some("xml")),
            ("pluggy.py", Some("pluggy")),
            ("src/_pytest/junitxml.py", Some("_pytest")),
            ("unittest/__init__.py", Some("unittest")),
            ("src/minicalc/json.py", None),
            ("src/minicalc/__init__.py", None),
            ("src/mul.py", None),
            ("README.md", None),
            ("docs/json.py", None),
        ] {
            assert_eq!(shadowed_module(path).as_deref(), module, "{path}");
        }
    }
}
