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

/// Settings every command gets.
const NEUTRAL: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "diff.external=",
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
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        // git reads the XDG file first and `~/.gitconfig` after it: the later wins.
        let files = [
            xdg.map(|x| x.join("git/config")),
            home.as_ref().map(|h| h.join(".gitconfig")),
        ];
        let mut found = None;
        for f in files.into_iter().flatten() {
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
    pin_common_dir(c, dirs.as_ref());
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
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
    let settings: Vec<(String, String)> = drivers_of(dirs.as_ref())
        .iter()
        .flat_map(Driver::neutral)
        .collect();
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
    if let Some(dir) = pin {
        pin_common_dir(c, git_dirs(dir).as_ref());
    }
    c.env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0"])
        .args(["-c", "maintenance.auto=false"]);
}

/// A driver the repository's configuration defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Driver {
    Filter(String),
    Diff(String),
    Merge(String),
}

impl Driver {
    /// The settings (key, value) that keep git from running it.
    fn neutral(&self) -> Vec<(String, String)> {
        let set = |k: String, v: &str| (k, v.to_string());
        match self {
            // `cat` passes content through unchanged; an empty `process` is no
            // process; a required filter may then be missing.
            Driver::Filter(n) => vec![
                set(format!("filter.{n}.clean"), "cat"),
                set(format!("filter.{n}.smudge"), "cat"),
                set(format!("filter.{n}.process"), ""),
                set(format!("filter.{n}.required"), "false"),
            ],
            Driver::Diff(n) => vec![
                set(format!("diff.{n}.textconv"), ""),
                set(format!("diff.{n}.command"), ""),
            ],
            // The merge is then a conflict for the agent to resolve, never a program
            // of the project's.
            Driver::Merge(n) => vec![set(format!("merge.{n}.driver"), "false")],
        }
    }
}

/// The drivers the repository at `dir` configures: read from its configuration files
/// (the common `config`, a worktree's `config.worktree`, and every file they
/// include, whatever the include's condition: over-reading only neutralises more).
#[cfg(test)]
fn drivers(dir: &Path) -> Vec<Driver> {
    drivers_of(git_dirs(dir).as_ref())
}

/// [`drivers`] of the repository whose git directories ([`git_dirs`]) are `dirs`:
/// read from its common git directory's `config` and `config.worktree`, and a
/// worktree's own `config.worktree`.
fn drivers_of(dirs: Option<&(PathBuf, PathBuf)>) -> Vec<Driver> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    if let Some((gitdir, common)) = dirs {
        for f in [
            common.join("config"),
            common.join("config.worktree"),
            gitdir.join("config.worktree"),
        ] {
            read(&f, 0, &mut seen, &mut out);
        }
    }
    out
}

/// The git directory of the repository at (or above) `dir` and its common one, found
/// by where they are, never by a `commondir` file: the repository's `.git` directory
/// is its own common one; a worktree's `.git` file names its git directory, which
/// lies in the common one's `worktrees/`. (A `commondir` file is what an agent or a
/// check could write to point git at a repository of its making.)
pub(crate) fn git_dirs(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let start = dir.canonicalize().ok()?;
    for d in start.ancestors() {
        let g = d.join(".git");
        if g.is_dir() {
            return Some((g.clone(), g));
        }
        if let Ok(text) = std::fs::read_to_string(&g)
            && let Some(gitdir) = text.strip_prefix("gitdir:")
        {
            let gitdir = d.join(gitdir.trim());
            let gitdir = gitdir.canonicalize().unwrap_or(gitdir);
            let common = gitdir
                .parent()
                .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"))
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_else(|| gitdir.clone());
            return Some((gitdir, common));
        }
    }
    None
}

/// Where a `commondir` file points git elsewhere than the repository's own common
/// directory, git is told that one instead. (Only then: a command that makes a
/// repository — `init` under another — must find none.)
fn pin_common_dir(c: &mut Command, dirs: Option<&(PathBuf, PathBuf)>) {
    let Some((gitdir, common)) = dirs else {
        return;
    };
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
        c.env("GIT_COMMON_DIR", common);
    }
}

fn read(path: &Path, depth: u32, seen: &mut Vec<PathBuf>, out: &mut Vec<Driver>) {
    if depth > 10 || seen.iter().any(|s| s == path) {
        return;
    }
    seen.push(path.to_path_buf());
    let Ok(text) = std::fs::read(path) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let mut section = String::new();
    for line in text.lines() {
        let l = line.trim();
        let (head, rest) = match header(l) {
            Some((kind, sub, rest)) => {
                section = kind.clone();
                if let Some(d) = driver(&kind, sub)
                    && !out.contains(&d)
                {
                    out.push(d);
                }
                (true, rest.trim())
            }
            None => (false, l),
        };
        // `[include] path = …` and `[includeIf "…"] path = …`, also on the section's
        // own line.
        // (`header` gives the section's name in lower case.)
        if !(section == "include" || section.starts_with("includeif")) {
            continue;
        }
        let kv = if head { rest } else { l };
        if let Some((k, v)) = kv.split_once('=')
            && k.trim().eq_ignore_ascii_case("path")
        {
            let v = v.trim().trim_matches('"');
            let p = if let Some(home) = v.strip_prefix("~/") {
                std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(home))
                    .unwrap_or_default()
            } else {
                path.parent().unwrap_or(Path::new("/")).join(v)
            };
            read(&p, depth + 1, seen, out);
        }
    }
}

/// A section header as git reads it: `[kind "sub"]` (the subsection in quotes, a
/// backslash taking the next character as it is, `\"` and `\\` too), or the old
/// `[kind.sub]`; the section's name, the subsection, and what follows the `]`.
fn header(line: &str) -> Option<(String, Option<String>, &str)> {
    let body = line.strip_prefix('[')?;
    let end = body.find(|c: char| c.is_whitespace() || c == ']' || c == '"')?;
    let (name, after) = body.split_at(end);
    let after = after.trim_start();
    if let Some(quoted) = after.strip_prefix('"') {
        let mut sub = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => sub.push(chars.next()?.1),
                '"' => {
                    let rest = quoted[i + 1..].trim_start().strip_prefix(']')?;
                    return Some((name.to_ascii_lowercase(), Some(sub), rest));
                }
                _ => sub.push(c),
            }
        }
        return None;
    }
    let rest = after.strip_prefix(']')?;
    match name.split_once('.') {
        Some((kind, sub)) => Some((
            kind.to_ascii_lowercase(),
            Some(sub.to_ascii_lowercase()),
            rest,
        )),
        None => Some((name.to_ascii_lowercase(), None, rest)),
    }
}

/// `filter "x"` (or the old `filter.x`) → the driver it defines.
fn driver(kind: &str, sub: Option<String>) -> Option<Driver> {
    let name = sub.filter(|n| !n.is_empty() && !n.contains('\n'))?;
    match kind {
        "filter" => Some(Driver::Filter(name)),
        "diff" => Some(Driver::Diff(name)),
        "merge" => Some(Driver::Merge(name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn drivers_are_read_from_the_config_and_what_it_includes() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n[filter \"lfs\"]\n\tsmudge = evil\n[diff \"img\"] textconv = evil\n[include]\n\tpath = more.cfg\n",
        )
        .unwrap();
        std::fs::write(
            git.join("more.cfg"),
            "[merge.lock]\n\tdriver = evil %A\n[includeIf \"gitdir:x\"]\npath = more.cfg\n",
        )
        .unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(
            drivers(&sub),
            [
                Driver::Filter("lfs".into()),
                Driver::Diff("img".into()),
                Driver::Merge("lock".into())
            ]
        );
    }

    #[test]
    fn subsections_are_read_as_git_reads_them() {
        let h = |l: &str| header(l).map(|(k, s, _)| (k, s));
        assert_eq!(
            h(r#"[filter "e\vil"]"#),
            Some(("filter".into(), Some("evil".into())))
        );
        assert_eq!(
            h(r#"[Filter "a]b\"c\\"] clean = x"#),
            Some(("filter".into(), Some(r#"a]b"c\"#.into())))
        );
        assert_eq!(
            h("[filter.LFS]"),
            Some(("filter".into(), Some("lfs".into())))
        );
        assert_eq!(h("[core]"), Some(("core".into(), None)));
        assert_eq!(h(r#"[filter "open"#), None);
    }

    /// Filters a repository defines run nothing under agentloop's git, however their
    /// names are spelled (an escape git drops, a `=`), and wherever git finds their
    /// configuration (a `commondir` the git directory names).
    #[test]
    fn no_filter_of_the_repository_runs_however_it_is_named_or_found() {
        for (config, attribute, commondir) in [
            (
                "[filter \"e\\vil\"]\n\tclean = touch MARK && cat\n",
                "evil",
                false,
            ),
            (
                "[filter \"a=b\"]\n\tclean = touch MARK && cat\n",
                "a=b",
                false,
            ),
            (
                "[filter \"far\"]\n\tclean = touch MARK && cat\n",
                "far",
                true,
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            crate::testing::git(root, &["init", "-q"]);
            if commondir {
                // The git directory's `commondir` names another, whose config git reads.
                let other = root.join(".git/other");
                std::fs::create_dir_all(&other).unwrap();
                for d in ["objects", "refs"] {
                    std::fs::create_dir_all(other.join(d)).unwrap();
                }
                std::fs::write(other.join("config"), config).unwrap();
                std::fs::write(root.join(".git/commondir"), "other\n").unwrap();
            } else {
                let mut text = std::fs::read_to_string(root.join(".git/config")).unwrap();
                text.push_str(config);
                std::fs::write(root.join(".git/config"), text).unwrap();
            }
            std::fs::write(
                root.join(".gitattributes"),
                format!("* filter={attribute}\n"),
            )
            .unwrap();
            std::fs::write(root.join("a.txt"), "a\n").unwrap();
            let out = super::super::git_command(root)
                .args(["add", "-A"])
                .output()
                .unwrap();
            assert!(
                !root.join("MARK").exists(),
                "{config}: the filter ran: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Set aside: the person's own git, after the run, does not follow it.
            assert!(!root.join(".git/commondir").exists());
        }
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
