//! The judge's confinement: every check (a task's, the regression and held-out checks,
//! VALIDATE, the merge queue's, a planner proposal's, the baseline's) runs under
//! bubblewrap by default wherever it works (`[sandbox] verify = "auto"`), whatever
//! the agents' own `mode`: its copy writable, and the directory its runner's report
//! goes to; nothing else of the home directory, the caches or the project's
//! repository writable (none of the agent CLIs' directories either); a fresh home,
//! configuration, cache and `/tmp` for each check (the real toolchains' homes
//! read-only), Go's build cache in it too, and the copy's Python bytecode gone, not
//! where an earlier check could have left them; no network at all; a process
//! namespace of its own, so every process the check started ends when it does.
//!
//! Go's build cache and Jest's transform cache are each check's own, but not empty: a
//! copy of the ones the run's baseline warmed ([`WarmCaches`]), which ran the person's
//! code as the run found it. (A fresh cache per check built Go's standard library again
//! at every check: 3.5 s against 0.6 s on a one-package module; Jest transformed every
//! test file again: a check 1.3× a run by hand.) Test results are never taken from Go's
//! (`GOFLAGS=-count=1`); Jest's holds each file's transformed code under a digest of
//! its source, so a file changed since the baseline is transformed again.

use std::path::{Path, PathBuf};

use agentloop_config::{ConfineChecks, SandboxConfig};

use super::{Confinement, JUDGE_HOME, Unable, bind, files, home, probe, push};

/// Where bytecode staged for a check ([`with_bytecode`]) is seen inside it (a macro, so
/// that [`FORGET_BYTECODE`] is one literal).
macro_rules! py_seed {
    () => {
        "/tmp/.py-seed"
    };
}

/// What a confined check runs first, in the copy (not under its `.git`): every
/// directory made the owner's to read, write and enter again before it is walked (a
/// check's code can leave one it cannot be looked into, or emptied, by a user who is
/// not root: the stop-76 attack); every `__pycache__` removed, whatever it is (a link,
/// which Python would follow, as a link); the check not run, and what is left named,
/// if one cannot be removed or a directory cannot be walked; the bytecode staged for
/// it copied in when there is some ([`with_bytecode`]); then the check itself.
const FORGET_BYTECODE: &str = concat!(
    "chmod u+rwx . 2>/dev/null; ",
    "left=$(find . -path ./.git -prune -o \\( -type d ! -perm -u=rwx -exec chmod u+rwx {} \\; -false \\) ",
    "-o -name __pycache__ -prune -exec sh -c 'for p; do [ -L \"$p\" ] || chmod -R u+rwx \"$p\" 2>/dev/null; rm -rf \"$p\" 2>/dev/null; ",
    "if [ -e \"$p\" ] || [ -L \"$p\" ]; then printf \"%s \" \"$p\"; fi; done' sh {} + 2>/dev/null || echo 'a directory it cannot read'); ",
    "if [ -n \"$left\" ]; then echo \"agentloop: the copy's Python bytecode cannot be removed ($left); the check does not run\" >&2; exit 125; fi; ",
    "[ ! -d ",
    py_seed!(),
    " ] || cp -R ",
    py_seed!(),
    "/. . 2>/dev/null; exec \"$@\""
);

/// [`FORGET_BYTECODE`] for a check that runs in the project itself (which passes
/// nothing): what cannot be removed there (a person's, a root-owned `__pycache__` a
/// container left) does not stop it.
const FORGET_BYTECODE_IN_PROJECT: &str = "find . -path ./.git -prune -o -name __pycache__ -prune -exec sh -c 'for p; do [ -L \"$p\" ] || chmod -R u+rwx \"$p\"; rm -rf \"$p\"; done' sh {} + 2>/dev/null; exec \"$@\"";

const PY_SEED: &str = py_seed!();

/// Where a confined check's build caches come from (Go's build cache, Jest's transform
/// cache). Never ones an earlier check wrote: its code could have left forged entries
/// there for the next check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarmCaches {
    /// Empty.
    Fresh,
    /// A copy of the caches in this directory (read-only to the check), the ones the
    /// run's baseline warmed; empty where it has not been.
    From(PathBuf),
    /// The caches in this directory themselves, written: for the baseline's checks,
    /// which run the person's code as the run found it.
    Warms(PathBuf),
}

/// Each cache in a seed directory: its name there, where a check sees the seed's
/// copy (read-only), and where the tool looks for it in the check.
fn caches() -> [(&'static str, &'static str, String); 2] {
    [
        ("go-build", "/tmp/.go-seed", go_cache()),
        ("jest", "/tmp/.jest-seed", jest_cache()),
    ]
}

/// Where a check's Go build cache is (`GOCACHE`): in its fresh home.
fn go_cache() -> String {
    format!("{JUDGE_HOME}/.cache/go-build")
}

/// Where Jest keeps its cache when its configuration does not say: `jest_` and the
/// user id in base 36, in the temporary directory (`/tmp` in a check).
fn jest_cache() -> String {
    let mut uid = nix::unistd::getuid().as_raw();
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit(uid % 36, 36).expect("a base-36 digit"));
        uid /= 36;
        if uid == 0 {
            break;
        }
    }
    format!("/tmp/jest_{}", digits.iter().rev().collect::<String>())
}

/// The confinement of a check run in `workdir`, whose runner's report goes to
/// `reports` (made here first).
pub(super) fn confine(
    cfg: &SandboxConfig,
    root: &Path,
    workdir: &Path,
    reports: &Path,
    warm: &WarmCaches,
) -> Confinement {
    let mut a = files(cfg, root, workdir, None);
    // The repository itself, when a check runs in the project: read-only, so no
    // check points agentloop's own git, which runs outside any sandbox, at a
    // repository of its making (`commondir`), with a filter of its own. (A copy's
    // link to its repository is read-only for everyone: `files`.)
    let git = workdir.join(".git");
    if git.is_dir() {
        bind(&mut a, "--ro-bind", &git, &git);
    }
    if std::fs::create_dir_all(reports).is_ok() {
        bind(&mut a, "--bind", reports, reports);
    }
    push(&mut a, &["--unshare-net", "--unshare-pid"]);
    let home = home();
    // Toolchains found through the home directory by default stay where they are.
    for (var, dir) in [
        ("RUSTUP_HOME", ".rustup"),
        ("CARGO_HOME", ".cargo"),
        ("PYENV_ROOT", ".pyenv"),
        ("NVM_DIR", ".nvm"),
        ("GOPATH", "go"),
    ] {
        if std::env::var_os(var).is_none() && home.join(dir).is_dir() {
            a.push("--setenv".into());
            a.push(var.into());
            a.push(home.join(dir).into());
        }
    }
    push(&mut a, &["--dir", JUDGE_HOME]);
    for (var, dir) in [
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        let at = format!("{JUDGE_HOME}/{dir}");
        push(&mut a, &["--dir", &at, "--setenv", var, &at]);
    }
    // The caches a check would read from where the last one wrote: fresh, whatever
    // the user's environment names (Go's build and test results), or the defaults,
    // which are in the fresh home or in the copy.
    push(&mut a, &["--setenv", "GOCACHE", &go_cache()]);
    // No test result from the cache: a test whose inputs Go does not track (a file
    // read through a subprocess, the clock) would pass as it passed at the baseline
    // (the stop-67 attack). Compiled packages still come from it.
    let goflags = match std::env::var("GOFLAGS") {
        Ok(f) if !f.trim().is_empty() => format!("{f} -count=1"),
        _ => "-count=1".to_string(),
    };
    push(&mut a, &["--setenv", "GOFLAGS", &goflags]);
    let mut first = String::new();
    for (name, seen, cache) in caches() {
        match warm {
            WarmCaches::Fresh => {}
            WarmCaches::From(seed) => {
                let seed = seed.join(name);
                if std::fs::read_dir(&seed).is_ok_and(|mut d| d.next().is_some()) {
                    bind(&mut a, "--ro-bind", &seed, Path::new(seen));
                    first.push_str(&format!(
                        "mkdir -p \"{cache}\" && cp -a {seen}/. \"{cache}\"/ 2>/dev/null; "
                    ));
                }
            }
            WarmCaches::Warms(seed) => {
                let seed = seed.join(name);
                if std::fs::create_dir_all(&seed).is_ok() {
                    bind(&mut a, "--bind", &seed, Path::new(&cache));
                }
            }
        }
    }
    for var in [
        "CARGO_TARGET_DIR",
        "PIP_CACHE_DIR",
        "npm_config_cache",
        "NPM_CONFIG_CACHE",
        "YARN_CACHE_FOLDER",
        "XDG_RUNTIME_DIR",
    ] {
        push(&mut a, &["--unsetenv", var]);
    }
    push(
        &mut a,
        &[
            "--setenv", "HOME", JUDGE_HOME, "--setenv", "TMPDIR", "/tmp", "--",
        ],
    );
    let forget = if workdir == root {
        FORGET_BYTECODE_IN_PROJECT
    } else {
        FORGET_BYTECODE
    };
    // Python's bytecode beside the sources (ignored files stay in the copy between
    // checks): an earlier check's code could have left some for this one to run
    // instead of the source. Gone before the check, inside its confinement; the
    // interpreter's and the packages' own, outside the copy, stay.
    push(&mut a, &["sh", "-c", &format!("{first}{forget}"), "sh"]);
    Confinement {
        prefix: a,
        ..Confinement::default()
    }
}

/// Why the checks of a run with `cfg` run unconfined here, or `None` when they are
/// confined. `[sandbox] verify = true` is never unconfined: where bubblewrap fails,
/// its error fails each check.
pub fn unconfined(cfg: &SandboxConfig) -> Option<String> {
    match cfg.verify {
        ConfineChecks::Never => Some("`[sandbox] verify = false`".into()),
        ConfineChecks::Always => None,
        ConfineChecks::Auto => works(&cfg.bwrap).err(),
    }
}

/// The command a check in `workdir` runs under: confined (see [`confine`]) unless
/// [`unconfined`] says why not.
pub fn wrap(
    cfg: &SandboxConfig,
    root: &Path,
    workdir: &Path,
    reports: &Path,
    warm: &WarmCaches,
) -> Vec<std::ffi::OsString> {
    if unconfined(cfg).is_some() {
        return Vec::new();
    }
    confine(cfg, root, workdir, reports, warm).prefix
}

/// A check's confinement (`prefix`, as [`wrap`] gives it) that copies the bytecode
/// in `stage` ([`super::bytecode::stage`], made for this check just before) into its
/// copy after the copy's own is gone. Bound last, over the fresh `/tmp`, read-only.
pub fn with_bytecode(prefix: &[std::ffi::OsString], stage: &Path) -> Vec<std::ffi::OsString> {
    insert_options(prefix, &["--ro-bind".into(), stage.into(), PY_SEED.into()])
}

/// A check's confinement (`prefix`, as [`wrap`] gives it) in which Python writes the
/// bytecode it compiles, whatever `PYTHONDONTWRITEBYTECODE` says: a baseline's check,
/// whose bytecode is kept ([`super::bytecode::keep`]).
pub fn writing_bytecode(prefix: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    insert_options(
        prefix,
        &["--unsetenv".into(), "PYTHONDONTWRITEBYTECODE".into()],
    )
}

/// `prefix` with `more` of bubblewrap's options after its own.
fn insert_options(
    prefix: &[std::ffi::OsString],
    more: &[std::ffi::OsString],
) -> Vec<std::ffi::OsString> {
    let mut out = prefix.to_vec();
    if let Some(end) = options_end(&out) {
        out.splice(end..end, more.iter().cloned());
    }
    out
}

/// Where bubblewrap's options end in `prefix` (the `--` before the command).
fn options_end(prefix: &[std::ffi::OsString]) -> Option<usize> {
    let mut k = 1; // after the program
    while k < prefix.len() {
        if prefix[k] == "--" {
            return Some(k);
        }
        k += 1 + option_values(&prefix[k]);
    }
    None
}

/// How many values each of bubblewrap's options that a confinement uses takes.
fn option_values(arg: &std::ffi::OsStr) -> usize {
    match arg.to_str() {
        Some("--bind" | "--ro-bind" | "--dev-bind" | "--setenv" | "--symlink") => 2,
        Some("--dir" | "--tmpfs" | "--unsetenv" | "--proc" | "--dev" | "--chdir") => 1,
        _ => 0,
    }
}

/// A check's confinement (`prefix`, as [`wrap`] gives it) with nothing writable but
/// the paths of `keep`: every other path it binds writable (`[sandbox] writable`) is
/// bound read-only instead. For the held-out checks, whose files the agent's code
/// must not carry anywhere that outlives them.
pub fn writable_only(prefix: &[std::ffi::OsString], keep: &[&Path]) -> Vec<std::ffi::OsString> {
    let mut out = prefix.to_vec();
    let mut k = 1; // after the program
    while k < out.len() && out[k] != "--" {
        let n = option_values(&out[k]);
        if out[k] == "--bind"
            && let Some(from) = out.get(k + 1)
            && !keep.iter().any(|p| p.as_os_str() == from.as_os_str())
        {
            out[k] = "--ro-bind".into();
        }
        k += 1 + n;
    }
    out
}

/// Starts finding out [`works`] for `bwrap` on a thread of its own, so that the first
/// check need not wait for it: the driver does other work meanwhile (a check that comes
/// first waits for the same answer, not for a second probe).
pub fn find_out_early(bwrap: &str) {
    let bwrap = bwrap.to_string();
    let _ = std::thread::Builder::new()
        .name("bwrap-probe".into())
        .spawn(move || works(&bwrap));
}

/// Whether `bwrap` can make a check's sandbox here (its own network and process
/// namespaces), found once per process and program.
pub fn works(bwrap: &str) -> Result<(), String> {
    static FOUND: std::sync::Mutex<Vec<(String, Result<(), String>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = found.iter().find(|(b, _)| b == bwrap) {
        return r.clone();
    }
    let flags = [
        "--die-with-parent",
        "--unshare-user",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
    ];
    let r = probe(bwrap, &flags).map_err(|u| match u {
        Unable::Refused(said) => format!(
            "bubblewrap cannot make a sandbox here ({said}); allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0)"
        ),
        Unable::Missing(e) => format!(
            "bubblewrap (`{bwrap}`) is not installed ({e}); install it (Debian: apt-get install bubblewrap)"
        ),
    });
    found.push((bwrap.to_string(), r.clone()));
    r
}

#[cfg(test)]
mod tests;
