//! A new Python module that would stand in for one the checks import. The checks put
//! the judged tree's `src/` (or, under `python -m`, its root) on Python's path ahead of
//! the standard library and the installed packages, so a new `src/json.py`,
//! `src/pluggy.py` or root `xml/` would run the agent's code inside the judge, in
//! place of the module the runner or the tests meant. Only new files count: a
//! project's own package that happens to share a name is its code.

use std::path::Path;

use agentloop_evidence::{PythonNames, Shadowable};

/// What pytest and its usual plugins import that is not the standard library; what
/// the installed packages' `.pth` files import when Python starts, before any check
/// runs (`setuptools`, `virtualenv`, pywin32; their private modules, and setuptools'
/// editable finders, are every name that starts with `_`: below); and the names the
/// standard library and pytest try only to see whether they are there — `copy` and
/// `pickle` look for Jython's `org` whenever pytest starts (the stop-77 second attack:
/// a root `org/__init__.py` forged the report), `platform` for `java` and `vms_lib`,
/// `logging.handlers` and `distutils` for pywin32's modules, pytest for
/// `argcomplete`, `pexpect`, `numpy`, `twisted` and `zope`; Python 3.14's new
/// `annotationlib` and `compression` (the list below is 3.11's).
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
    "setuptools",
    "pkg_resources",
    "virtualenv",
    "pywin32_bootstrap",
    "org",
    "java",
    "vms_lib",
    "win32api",
    "win32con",
    "win32evtlog",
    "win32evtlogutil",
    "pywintypes",
    "docutils",
    "pip",
    "argcomplete",
    "pexpect",
    "numpy",
    "twisted",
    "zope",
    "annotationlib",
    "compression",
];

/// The standard library's top-level modules (CPython 3.11's `sys.stdlib_module_names`,
/// the private `_x` ones too: pytest's own imports pull in `_compression`): a list,
/// not a `python3` asked, since the surface asks about every new file, in the Stop
/// hook too.
const STDLIB: &[&str] = &[
    "__future__",
    "_abc",
    "_aix_support",
    "_ast",
    "_asyncio",
    "_bisect",
    "_blake2",
    "_bootsubprocess",
    "_bz2",
    "_codecs",
    "_codecs_cn",
    "_codecs_hk",
    "_codecs_iso2022",
    "_codecs_jp",
    "_codecs_kr",
    "_codecs_tw",
    "_collections",
    "_collections_abc",
    "_compat_pickle",
    "_compression",
    "_contextvars",
    "_crypt",
    "_csv",
    "_ctypes",
    "_curses",
    "_curses_panel",
    "_datetime",
    "_dbm",
    "_decimal",
    "_elementtree",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "_functools",
    "_gdbm",
    "_hashlib",
    "_heapq",
    "_imp",
    "_io",
    "_json",
    "_locale",
    "_lsprof",
    "_lzma",
    "_markupbase",
    "_md5",
    "_msi",
    "_multibytecodec",
    "_multiprocessing",
    "_opcode",
    "_operator",
    "_osx_support",
    "_overlapped",
    "_pickle",
    "_posixshmem",
    "_posixsubprocess",
    "_py_abc",
    "_pydecimal",
    "_pyio",
    "_queue",
    "_random",
    "_scproxy",
    "_sha1",
    "_sha256",
    "_sha3",
    "_sha512",
    "_signal",
    "_sitebuiltins",
    "_socket",
    "_sqlite3",
    "_sre",
    "_ssl",
    "_stat",
    "_statistics",
    "_string",
    "_strptime",
    "_struct",
    "_symtable",
    "_thread",
    "_threading_local",
    "_tkinter",
    "_tokenize",
    "_tracemalloc",
    "_typing",
    "_uuid",
    "_warnings",
    "_weakref",
    "_weakrefset",
    "_winapi",
    "_zoneinfo",
    "abc",
    "aifc",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// A top-level name a new module may not take: the standard library's, the runner's,
/// and every private one (`_x`). The interpreter imports private modules of the
/// installed packages at start-up through their `.pth` files — setuptools'
/// `_distutils_hack` (its `distutils-precedence.pth`, in every virtual environment
/// `venv` makes), `_virtualenv`, setuptools' `__editable___NAME_finder` — and the judged
/// tree comes first on the path then: the stop-77 attack's root `_distutils_hack.py`
/// replaced `json.dumps` before pytest started and turned the report's every failure
/// into a pass. A project's own new top-level module is rarely private (a package's
/// `__init__`, `__main__` and a `__pycache__` are not modules of their own).
fn shadowable(name: &str) -> bool {
    let private = name.starts_with('_') && !matches!(name, "__init__" | "__main__" | "__pycache__");
    private || STDLIB.binary_search(&name).is_ok() || RUNNER_MODULES.contains(&name)
}

/// The module a new file at `path` would shadow, if it would: a top-level module or
/// package of the project's root, of `src/` or of a directory of the tree the checks'
/// interpreters had on their path, named like one every check imports or one
/// `learned` at the test baseline (what their interpreters took from outside the tree
/// or looked for there). Said as the name, and for a learned one how it was learned.
pub fn shadowed_module(path: &str, learned: &Shadowable) -> Option<String> {
    let dirs = ["", "src"]
        .into_iter()
        .chain(learned.dirs.iter().map(String::as_str));
    dirs.filter_map(|dir| {
        let rest = if dir.is_empty() {
            path
        } else {
            path.strip_prefix(dir)?.strip_prefix('/')?
        };
        let name = top_level(rest)?;
        if shadowable(name) {
            return Some(name.to_string());
        }
        let how = learned.names.get(name)?;
        Some(format!("{name}, {how}"))
    })
    .next()
}

/// The top-level module a file at `rest` (relative to a directory on Python's path)
/// is, in any form Python imports from a path entry: source, a sourceless `.pyc`
/// (which Python loads when it stands alone), an extension module (`json.so`,
/// `json.abi3.so`, `json.cpython-311-x86_64-linux-gnu.so`), or a package's directory.
fn top_level(rest: &str) -> Option<&str> {
    let first = rest.split('/').next()?;
    if rest.contains('/') {
        return Some(first);
    }
    let (name, _) = first.split_once('.')?;
    let ext = first.rsplit('.').next()?;
    matches!(ext, "py" | "pyc" | "pyo" | "pyw" | "so" | "pyd").then_some(name)
}

/// What a new module of the tree at `root` (as the check saw it) would stand in for,
/// from what one check's interpreter `saw`: each module it took from outside the
/// project's own directories, each name code outside them looked for and did not
/// find, and the tree's directories on its path. A name every check imports anyway
/// ([`shadowable`]) is not repeated; a name the project's own code looked for is the
/// project's to add (`try: import speedups`), as is one its own directories held.
pub fn learn(saw: &PythonNames, root: &Path) -> Shadowable {
    let own = |file: &str| -> Option<String> {
        let rel = Path::new(file).strip_prefix(root).ok()?;
        let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
        // A carried virtual environment, a tool's directory: installed, not the
        // project's.
        let installed = parts.iter().any(|p| {
            p.starts_with('.') || matches!(*p, "site-packages" | "dist-packages" | "node_modules")
        });
        (!installed).then(|| parts.join("/"))
    };
    let mut out = Shadowable::default();
    for entry in &saw.path {
        if let Some(dir) = own(entry) {
            out.dirs.insert(dir);
        }
    }
    let plain = |name: &str| {
        !name.is_empty()
            && !shadowable(name)
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    for (name, from) in &saw.imported {
        if plain(name) && own(from).is_none() {
            let how = if from.is_empty() {
                "built into the interpreter".to_string()
            } else {
                format!("imported from {from}")
            };
            out.names.insert(name.clone(), how);
        }
    }
    for (name, by) in &saw.missing {
        if plain(name) && own(by).is_none() && !out.names.contains_key(name) {
            let how = if by.is_empty() {
                "looked for and not found".to_string()
            } else {
                format!("looked for by {by}")
            };
            out.names.insert(name.clone(), how);
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
            ("src/_pytest/junitxml.py", Some("_pytest")),
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
                "embedded",
                "nobody_knows",
                "reportlib",
                "speedups",
                "vendored"
            ]
        );
        assert_eq!(
            learned.names["speedups"],
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
            ("lib/reportlib.py", None),
            ("fastpath.py", None),
            ("src/calc/reportlib.py", None),
            ("tests/test_new.py", None),
        ] {
            assert_eq!(shadowed_module(path, &learned).as_deref(), module, "{path}");
        }
    }
}
