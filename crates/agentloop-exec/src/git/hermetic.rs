//! agentloop's own git runs no code the project, the agent or the user's configuration
//! planted: no hooks (`core.hooksPath`, `.git/hooks/`), no clean/smudge filters, no
//! textconv, no merge drivers, no replace objects, no file-system monitor, no signing,
//! no automatic maintenance, and no system or global configuration at all — only the
//! repository's own, with every driver it names neutralised, and the settings
//! agentloop names itself. (What a person's configuration is still needed for —
//! their commit identity, a remote's credentials — is taken explicitly: see
//! [`super::user_identity`] and [`remote`].)

use std::path::{Path, PathBuf};
use std::process::Command;

use super::drivers::{self, Driver};

/// Settings every command gets.
const NEUTRAL: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    // rerere would copy whatever path a worktree's `MERGE_RR` names into
    // `rr-cache/`, and replay resolutions an agent planted there.
    "rerere.enabled=false",
    "maintenance.auto=false",
    "diff.external=",
    // An attributes file the repository's configuration names assigns drivers as
    // `.gitattributes` does, and no surface watches it.
    "core.attributesFile=/dev/null",
    // A git of another repository's (a submodule's, an embedded one's) would run with
    // that repository's own configuration, whose drivers no one neutralised: `status`
    // and `diff` do not look inside them (`add -A` leaves them out: `add_all_args`).
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    // Nothing of a repository's runs here, so one owned by another user is safe to
    // read (the person's `safe.directory`, in the configuration skipped, would say so).
    "safe.directory=*",
];

/// The person's own global ignore file (`core.excludesFile` in their configuration,
/// which is otherwise skipped): what they ignore everywhere stays ignored. An ignore
/// file runs nothing. Read from their global configuration files once per process,
/// without starting git (the stop hook starts few processes).
fn user_excludes() -> Option<&'static str> {
    static FILE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut found = None;
        for f in global_files() {
            if let Some(v) = value_in(&f, "core", "excludesfile") {
                found = Some(v);
            }
        }
        let v = found?;
        Some(match (v.strip_prefix("~/"), &home) {
            (Some(rest), Some(h)) => h.join(rest).display().to_string(),
            _ => v,
        })
    })
    .as_deref()
}

/// The person's global configuration files, in the order git reads them (the later
/// wins): the XDG file, then `~/.gitconfig`.
fn global_files() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    [
        xdg.map(|x| x.join("git/config")),
        home.map(|h| h.join(".gitconfig")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Whether the person's git filters Git LFS's files in the repository at `dir`: `git
/// lfs install` wrote the `lfs` filter into their global (or the system's)
/// configuration. Their checkouts then hold the content, and agentloop's git does as
/// theirs (`lfs`). Asked of git in that repository (a conditional include, `includeIf
/// "gitdir:…"`, counted as git counts it there; `git config` runs nothing), once per
/// process and common git directory.
fn person_uses_lfs(dir: &Path, common: &Path) -> bool {
    static ASKED: std::sync::Mutex<Vec<(PathBuf, bool)>> = std::sync::Mutex::new(Vec::new());
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, uses)) = asked.iter().find(|(c, _)| c == common) {
        return *uses;
    }
    let uses = ["--global", "--system"].iter().any(|scope| {
        Command::new("git")
            .args(["config", scope, "--includes", "--get-regexp"])
            .arg(r"^filter\.lfs\.(process|smudge)$")
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    });
    asked.push((common.to_path_buf(), uses));
    uses
}

/// Whether the repository at `dir` (common git directory `common`) uses Git LFS: it
/// has an LFS store, or its attributes name the filter.
fn repository_uses_lfs(dir: &Path, common: &Path) -> bool {
    if common.join("lfs").is_dir() {
        return true;
    }
    // Read only as git reads it: a regular file, not a link (git does not follow one),
    // no larger than git reads (100 MB; here 1 MiB is plenty to find the word). A FIFO
    // or `/dev/zero` planted there holds nothing up.
    let at = dir.join(".gitattributes");
    std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20)
        && agentloop_ground::fsutil::read_regular(&at, 1 << 20)
            .is_ok_and(|a| a.windows(10).any(|w| w == b"filter=lfs"))
}

/// The last value of `section.key` (names without regard to case) in one config file.
fn value_in(path: &Path, section: &str, key: &str) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let mut current = String::new();
    let mut out = None;
    for line in text.lines() {
        let mut l = line.trim();
        if let Some((head, rest)) = l.strip_prefix('[').and_then(|r| r.split_once(']')) {
            current = head.trim().to_ascii_lowercase();
            l = rest.trim();
        }
        if current != section {
            continue;
        }
        if let Some((k, v)) = l.split_once('=')
            && k.trim().eq_ignore_ascii_case(key)
        {
            let v = v
                .split(['#', ';'])
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            out = Some(v.to_string()).filter(|v| !v.is_empty());
        }
    }
    out
}

/// Makes `c` hermetic for the repository at (or above) `dir`.
pub(crate) fn apply(c: &mut Command, dir: &Path) {
    // Its git directories, found once for both uses below.
    let dirs = git_dirs(dir);
    let pin = pinned(dirs.as_ref());
    if let Some(p) = pin {
        c.env("GIT_COMMON_DIR", p);
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        // Grafts (`info/grafts`) would show a history that is not the one stored.
        .env("GIT_GRAFT_FILE", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        // `status` and `diff` refresh the index only when they can skip its lock: a
        // reading git that is killed leaves no `index.lock` in the person's project.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_EXTERNAL_DIFF");
    for n in NEUTRAL {
        c.arg("-c").arg(n);
    }
    if let Some(f) = user_excludes() {
        c.arg("-c").arg(format!("core.excludesFile={f}"));
    }
    // Through the environment's key and value pairs, not `-c key=value`: a driver's
    // name may hold a `=` that `-c` would split at.
    let drivers = match &dirs {
        Some(d) => drivers::of(dir, d, pin),
        None => Vec::new(),
    };
    // Git LFS's filter is agentloop's own where it can be (`lfs`): it runs nothing
    // of the repository's or Git LFS's, and checks out what the person's git would.
    // Where the repository or the person's own configuration defines it.
    let lfs = dirs
        .as_ref()
        .and_then(|(_, common)| super::lfs::filter_settings(common));
    let is_lfs = |d: &Driver| matches!(d, Driver::Filter(name) if name == b"lfs");
    let lfs = lfs.filter(|_| {
        drivers.iter().any(is_lfs)
            || dirs.as_ref().is_some_and(|(_, common)| {
                repository_uses_lfs(dir, common) && person_uses_lfs(dir, common)
            })
    });
    let mut settings: Vec<(std::ffi::OsString, std::ffi::OsString)> = drivers
        .iter()
        .filter(|d| lfs.is_none() || !is_lfs(d))
        .flat_map(|d| d.neutral().into_iter().map(|(k, v)| (k, v.into())))
        .collect();
    settings.extend(lfs.into_iter().flatten());
    if !settings.is_empty() {
        c.env("GIT_CONFIG_COUNT", settings.len().to_string());
        for (i, (k, v)) in settings.into_iter().enumerate() {
            c.env(format!("GIT_CONFIG_KEY_{i}"), k);
            c.env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
    }
}

/// A command for a remote (push, fetch): the user's configuration, which holds the
/// remote's credentials and URL rewrites, but still no hooks (`pre-push`) and no
/// replace objects.
/// `pin`: the repository whose common git directory to hold (none for a `clone`,
/// which makes a repository of its own).
pub(crate) fn remote(c: &mut Command, pin: Option<&Path>) {
    let dirs = pin.and_then(git_dirs);
    if let Some(p) = pinned(dirs.as_ref()) {
        c.env("GIT_COMMON_DIR", p);
    }
    c.env("GIT_NO_REPLACE_OBJECTS", "1")
        // Grafts (`info/grafts`) would show a history that is not the one stored.
        .env("GIT_GRAFT_FILE", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0"])
        .args(["-c", "maintenance.auto=false"]);
}

/// The git directory of the repository at (or above) `dir` and its common one, found
/// by where they are, never by a `commondir` file: the repository's `.git` directory
/// is its own common one; a worktree's `.git` file names its git directory, which
/// lies in the common one's `worktrees/`. (A `commondir` file is what an agent or a
/// check could write to point git at a repository of its making.)
///
/// As git finds them: a `.git` directory that is no repository (no `HEAD`) is passed
/// over for the directories above; a `.git` that is anything else ends the search,
/// with nothing when it is not a `gitdir: ` file naming a git directory with a `HEAD`
/// (git refuses such a work tree; it never looks above it).
pub(crate) fn git_dirs(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let start = dir.canonicalize().ok()?;
    for d in start.ancestors() {
        let g = d.join(".git");
        if g.is_dir() {
            if g.join("HEAD").is_file() {
                return Some((g.clone(), g));
            }
            continue;
        }
        match std::fs::metadata(&g) {
            Err(_) => continue,
            // Never opened when it is no file: a FIFO would hold the read for good.
            Ok(m) if !m.is_file() => return None,
            Ok(_) => {}
        }
        // A `.git` file is one line: one of a gigabyte (sparse, taking no room) is not
        // read whole.
        let text = agentloop_ground::fsutil::read_regular(&g, 64 * 1024).ok()?;
        let named = text.strip_prefix(b"gitdir: ")?;
        let named = std::str::from_utf8(named).ok()?.trim();
        if named.is_empty() {
            return None;
        }
        let gitdir = d.join(named);
        let gitdir = gitdir.canonicalize().unwrap_or(gitdir);
        if !gitdir.join("HEAD").is_file() {
            return None;
        }
        let common = gitdir
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"))
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| gitdir.clone());
        return Some((gitdir, common));
    }
    None
}

/// Where a `commondir` file points git elsewhere than the repository's own common
/// directory, the common directory git is to be told instead (`GIT_COMMON_DIR`).
/// (Only then: a command that makes a repository — `init` under another — must find
/// none.)
fn pinned(dirs: Option<&(PathBuf, PathBuf)>) -> Option<&Path> {
    let (gitdir, common) = dirs?;
    let said = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| gitdir.join(c.trim()));
    let agrees = match said {
        None => gitdir == common,
        Some(p) => p.canonicalize().ok().as_ref() == Some(common),
    };
    if !agrees {
        // A repository's own `.git` never has one: an agent's or a check's, set aside
        // so that the person's own git, after the run, does not follow it either.
        if gitdir == common {
            let _ = std::fs::rename(
                gitdir.join("commondir"),
                gitdir.join("commondir.set-aside-by-agentloop"),
            );
        }
        return Some(common);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the second stop-80 attack: `.gitattributes` read whole, through a link,
    /// before each git command (a link to `/dev/zero`: 2 GB a command; a FIFO: for
    /// good).
    #[test]
    fn an_attributes_file_that_is_no_file_holds_nothing_up() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        crate::testing::git(root, &["init", "-q"]);
        let common = root.join(".git");
        let at = root.join(".gitattributes");
        std::os::unix::fs::symlink("/dev/zero", &at).unwrap();
        assert!(!repository_uses_lfs(root, &common));
        std::fs::remove_file(&at).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&at)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(!repository_uses_lfs(root, &common), "never opened");
        std::fs::remove_file(&at).unwrap();
        std::fs::write(&at, "*.dat filter=lfs diff=lfs merge=lfs -text\n").unwrap();
        assert!(repository_uses_lfs(root, &common));
    }

    #[test]
    fn a_value_is_read_from_a_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("gitconfig");
        std::fs::write(
            &f,
            "[user]\n\tname = a\n[core]\n\teditor = vi\n\texcludesFile = ~/.gitignore_global # mine\n[Core] ExcludesFile = \"/etc/ignore\"\n",
        )
        .unwrap();
        assert_eq!(
            value_in(&f, "core", "excludesfile").as_deref(),
            Some("/etc/ignore")
        );
        assert_eq!(value_in(&f, "user", "email"), None);
    }

    /// Where a test puts a filter's definition.
    enum Put {
        /// At the end of `.git/config`.
        Append,
        /// In another git directory, which `.git/commondir` names.
        CommonDir,
        /// In a file `.git/config` includes by a quoted path with a comment after it.
        QuotedInclude,
        /// At the start of `.git/config`, after a byte-order mark.
        Bom,
    }

    /// Filters a repository defines run nothing under agentloop's git, however their
    /// names are spelled (an escape git drops, a `=`, bytes that are not UTF-8), and
    /// wherever git finds their configuration (a `commondir` the git directory names,
    /// an include written as git reads it, a file that starts with a byte-order mark).
    #[test]
    fn no_filter_of_the_repository_runs_however_it_is_named_or_found() {
        let clean = "\tclean = touch MARK && cat\n";
        for (name, attribute, put) in [
            (&br#""e\vil""#[..], &b"evil"[..], Put::Append),
            (br#""a=b""#, b"a=b", Put::Append),
            (b"\"\xff\"", b"\xff", Put::Append),
            (br#""far""#, b"far", Put::CommonDir),
            (br#""inc""#, b"inc", Put::QuotedInclude),
            (br#""bom""#, b"bom", Put::Bom),
        ] {
            let mut config = b"[filter ".to_vec();
            config.extend_from_slice(name);
            config.extend_from_slice(b"]\n");
            config.extend_from_slice(clean.as_bytes());
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            crate::testing::git(root, &["init", "-q"]);
            let git = root.join(".git");
            let mut own = std::fs::read(git.join("config")).unwrap();
            match put {
                Put::Append => own.extend_from_slice(&config),
                Put::CommonDir => {
                    let other = git.join("other");
                    for d in ["objects", "refs"] {
                        std::fs::create_dir_all(other.join(d)).unwrap();
                    }
                    std::fs::write(other.join("config"), &config).unwrap();
                    std::fs::write(git.join("commondir"), "other\n").unwrap();
                }
                Put::QuotedInclude => {
                    std::fs::write(git.join("extra.cfg"), &config).unwrap();
                    own.extend_from_slice(b"[include]\n\tpath = \"extra.cfg\" ; kept apart\n");
                }
                Put::Bom => {
                    config.extend_from_slice(&own);
                    own = [&b"\xef\xbb\xbf"[..], &config].concat();
                }
            }
            std::fs::write(git.join("config"), own).unwrap();
            let mut attributes = b"* filter=".to_vec();
            attributes.extend_from_slice(attribute);
            attributes.push(b'\n');
            std::fs::write(root.join(".gitattributes"), attributes).unwrap();
            std::fs::write(root.join("a.txt"), "a\n").unwrap();
            let out = super::super::git_command(root)
                .args(["add", "-A"])
                .output()
                .unwrap();
            let name = String::from_utf8_lossy(name);
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!root.join("MARK").exists(), "{name}: the filter ran");
            // Set aside: the person's own git, after the run, does not follow it.
            assert!(!git.join("commondir").exists());
        }
    }

    /// What is known of a repository's drivers is asked again when a file its
    /// configuration includes changes (here a tracked file the agent can edit), also
    /// when the file is too large to be compared by its contents (found by the stop-67
    /// attack: a file over 1 MiB counted as unchanged).
    #[test]
    fn a_filter_defined_after_the_first_command_runs_nothing() {
        for padding in [0, 1_100_000] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            crate::testing::git(root, &["init", "-q"]);
            let mut own = std::fs::read(root.join(".git/config")).unwrap();
            own.extend_from_slice(b"[include]\n\tpath = ../shared.cfg\n");
            std::fs::write(root.join(".git/config"), own).unwrap();
            let pad = format!("# {}\n", "x".repeat(padding));
            std::fs::write(root.join("shared.cfg"), &pad).unwrap();
            std::fs::write(root.join(".gitattributes"), b"* filter=\xff\n").unwrap();
            let add = || {
                let out = super::super::git_command(root)
                    .args(["add", "-A"])
                    .output()
                    .unwrap();
                assert!(out.status.success());
            };
            add();
            let mut text = pad.into_bytes();
            text.extend_from_slice(b"[filter \"\xff\"] clean = touch MARK && cat\n");
            std::fs::write(root.join("shared.cfg"), text).unwrap();
            std::fs::write(root.join("a.txt"), "a\n").unwrap();
            add();
            assert!(!root.join("MARK").exists(), "{padding}: the filter ran");
        }
    }

    /// An attributes file the repository's configuration names assigns no driver.
    #[test]
    fn the_configurations_attributes_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        crate::testing::git(root, &["init", "-q"]);
        std::fs::write(root.join("attrs"), "* diff=evil\n").unwrap();
        let mut own = std::fs::read(root.join(".git/config")).unwrap();
        own.extend_from_slice(b"[core]\n\tattributesFile = attrs\n");
        std::fs::write(root.join(".git/config"), own).unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        let out = super::super::git_command(root)
            .args(["check-attr", "diff", "a.txt"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "a.txt: diff: unspecified\n"
        );
    }

    /// A repository inside the project (a gitlink, its directory a repository of its
    /// own with a filter) is not looked inside by agentloop's `status` and `diff`.
    #[test]
    fn status_and_diff_do_not_run_an_embedded_repositorys_filter() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mark = crate::testing::embedded_repository_with_a_filter(root);
        for args in [&["status", "--porcelain"][..], &["diff"], &["diff", "HEAD"]] {
            let _ = super::super::git_command(root).args(args).output().unwrap();
            assert!(
                !mark.exists(),
                "{args:?}: the embedded repository's filter ran"
            );
        }
    }
}
