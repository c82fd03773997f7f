//! A new Python module that would stand in for one the checks import. The checks put
//! the judged tree's `src/` (or, under `python -m`, its root) on Python's path ahead of
//! the standard library and the installed packages, so a new `src/json.py`,
//! `src/pluggy.py` or root `xml/` would run the agent's code inside the judge, in
//! place of the module the runner or the tests meant. Only new files count: a
//! project's own package that happens to share a name is its code.

use std::path::Path;

use agentloop_evidence::{How, LearnedName, PythonNames, Shadowable};

/// What pytest and its usual plugins import that is not the standard library; what
/// the installed packages' `.pth` files import when Python starts, before any check
/// runs (`setuptools`, `virtualenv`, pywin32; their private modules, and setuptools'
/// editable finders, are every name that starts with `_`: below); Python 3.14's new
/// `annotationlib` and `compression` (the list below is 3.11's). The names they only
/// look for are [`LOOKED_FOR`].
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
    // What `site` imports when Python starts, wherever it is found on the path: the
    // file `sitecustomize.py` is a check file by its name, but a package of that name
    // or a sourceless `.pyc` is the same module (the fifth stop-78 attack).
    "sitecustomize",
    "usercustomize",
    "docutils",
    "pip",
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
/// `__init__`, `__main__` and a `__pycache__` are not modules of their own). Only
/// where the interpreter looks when it starts (`at_start`: the root and `src/`): a
/// test directory pytest puts on the path later holds private helpers of the tests'
/// own (`tests/_helpers.py`).
fn shadowable(name: &str, at_start: bool) -> bool {
    let private = name.starts_with('_') && !matches!(name, "__init__" | "__main__" | "__pycache__");
    (private && at_start)
        || STDLIB.binary_search(&name).is_ok()
        || RUNNER_MODULES.contains(&name)
        || LOOKED_FOR.contains(&name)
}

/// The module a new file at `path` would shadow, if it would: a top-level module or
/// package of the project's root, of `src/` or of a directory of the tree the checks'
/// interpreters had on their path, named like one every check imports or one
/// `learned` at the test baseline (what their interpreters took from outside the tree
/// or looked for there). Said as the name, and for a learned one how it was learned.
///
/// A file inside a directory that is not its `__init__` makes that directory at most
/// a namespace package, which Python takes only when no finder found a module of the
/// name anywhere: it stands in only for a name looked for and not found (`org/python/
/// core.py` for the `org` `copy` looks for), never for one imported (a `locale/`,
/// `types/` or `yaml/` folder of data is no module in place of `locale`, `types` or
/// PyYAML). Private names count where the interpreter looks when it starts (the root,
/// `src/`) and only while the baseline taught nothing: its report names what the
/// installed packages' `.pth` files imported.
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
        let how = learned.names.get(name);
        if namespace_only(rest) {
            if LOOKED_FOR.contains(&name) {
                return Some(name.to_string());
            }
            let how = how.filter(|h| h.taken_by_a_folder())?;
            return Some(format!("{name}, {how}"));
        }
        let at_start = matches!(dir, "" | "src") && learned.dirs.is_empty();
        if shadowable(name, at_start) {
            return Some(name.to_string());
        }
        Some(format!("{name}, {}", how?))
    })
    .next()
}

/// Whether a file at `rest` makes its top-level directory at most a namespace
/// package: it lies inside that directory and is not its `__init__`.
fn namespace_only(rest: &str) -> bool {
    let Some((_, inside)) = rest.split_once('/') else {
        return false;
    };
    inside.contains('/') || module_of(inside) != Some("__init__")
}

/// The module a file of one directory on Python's path is, by its suffix: source, a
/// sourceless `.pyc` (which Python loads when it stands alone), an extension module
/// (`json.so`, `json.abi3.so`, `json.cpython-311-x86_64-linux-gnu.so`); and whether
/// it is an extension.
fn module_suffix(file: &str) -> Option<(&str, bool)> {
    let (stem, _) = file.split_once('.')?;
    match file.rsplit('.').next()? {
        "py" | "pyc" | "pyo" | "pyw" => Some((stem, false)),
        "so" | "pyd" => Some((stem, true)),
        _ => None,
    }
}

fn module_of(file: &str) -> Option<&str> {
    module_suffix(file).map(|(stem, _)| stem)
}

/// The names the standard library and pytest try only to see whether they are there,
/// which no installed module answers here — `copy` and `pickle` look for Jython's
/// `org` whenever pytest starts (the stop-77 second attack: a root `org/__init__.py`
/// forged the report), `platform` for `java` and `vms_lib`, `logging.handlers` and
/// `distutils` for pywin32's modules, pytest for `argcomplete`, `pexpect`, `numpy`,
/// `twisted` and `zope`, `os` and `subprocess` for Windows' `nt`, `msvcrt` and
/// `_winapi`: a namespace package of the tree would be taken for them too.
const LOOKED_FOR: &[&str] = &[
    "org",
    "java",
    "vms_lib",
    "win32api",
    "win32con",
    "win32evtlog",
    "win32evtlogutil",
    "pywintypes",
    "argcomplete",
    "pexpect",
    "numpy",
    "twisted",
    "zope",
    "nt",
    "msvcrt",
    "_winapi",
];

/// The top-level module a file at `rest` (relative to a directory on Python's path)
/// is, in any form Python imports from a path entry ([`module_suffix`]) or as a
/// package's directory.
fn top_level(rest: &str) -> Option<&str> {
    let first = rest.split('/').next()?;
    // A package's directory, or a link that stands for one (`org` → `lib/forge`).
    if rest.contains('/') || !first.contains('.') {
        return Some(first);
    }
    module_of(first)
}

/// The module of the tree a new file at `path` would be imported in place of, where
/// one is there: Python's finder takes, in one directory, a package (`x/__init__.py`)
/// before an extension module (`x.cpython-311-x86_64-linux-gnu.so`, `x.so`) before
/// source (`x.py`). So a new `conftest/__init__.py` beside a `conftest.py`, or a new
/// `pkg/__init__.cpython-311-x86_64-linux-gnu.so` beside `pkg/__init__.py`, runs in
/// their place (the stop-78 attacks), whatever the names. `exists`: whether the tree
/// holds a file.
pub fn displaces(path: &str, exists: impl Fn(&str) -> bool) -> Option<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    let (stem, native) = module_suffix(name)?;
    let mut rivals: Vec<String> = Vec::new();
    // A package: its `__init__` stands before a module of the package's name.
    if stem == "__init__" && !dir.is_empty() {
        rivals.push(format!("{}.py", dir.trim_end_matches('/')));
    }
    // An extension module stands before source of its name (an `__init__` too).
    if native {
        rivals.push(format!("{dir}{stem}.py"));
    }
    rivals
        .into_iter()
        .find(|r| r.as_str() != path && exists(r))
        .map(|r| format!("it would be imported in place of {r}"))
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
            && !shadowable(name, false)
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    for (name, from) in &saw.imported {
        if plain(name) && own(from).is_none() {
            let how = if from.is_empty() {
                How::BuiltIn
            } else if from.ends_with('/') {
                How::Namespace
            } else {
                How::Imported
            };
            let from = from.clone();
            out.names.insert(name.clone(), LearnedName { how, from });
        }
    }
    for (name, by) in &saw.missing {
        if plain(name) && own(by).is_none() && !out.names.contains_key(name) {
            let learned = LearnedName {
                how: How::LookedFor,
                from: by.clone(),
            };
            out.names.insert(name.clone(), learned);
        }
    }
    out
}

#[cfg(test)]
mod tests;
