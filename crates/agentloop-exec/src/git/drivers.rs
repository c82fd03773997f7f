//! The drivers (clean/smudge filters, diff and merge drivers) a repository's
//! configuration defines, which agentloop's git neutralises ([`super::hermetic`]).
//!
//! Found twice over, and the union neutralised (over-reading only neutralises more):
//! - git itself lists them, reading its files as it reads them (a byte-order mark,
//!   quotes and comments, an escape, a name in any bytes), and every file a
//!   conditional include names is listed apart, whatever the condition says now (an
//!   `onbranch:` that is false for this git may hold for one a command starts later);
//! - a reader of agentloop's own follows every include, whatever its condition.
//!
//! Asked once per repository and process, and again only when one of the files read
//! (the configuration and every file it includes) has changed: the stop hook starts few
//! processes.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// A driver the repository's configuration defines, by its name's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Driver {
    Filter(Vec<u8>),
    Diff(Vec<u8>),
    Merge(Vec<u8>),
}

impl Driver {
    /// The settings (key, value) that keep git from running it.
    pub(crate) fn neutral(&self) -> Vec<(OsString, &'static str)> {
        let key = |kind: &str, n: &[u8], var: &str| {
            let mut k = format!("{kind}.").into_bytes();
            k.extend_from_slice(n);
            k.extend_from_slice(format!(".{var}").as_bytes());
            OsString::from_vec(k)
        };
        match self {
            // `cat` passes content through unchanged; an empty `process` is no
            // process; a required filter may then be missing.
            Driver::Filter(n) => vec![
                (key("filter", n, "clean"), "cat"),
                (key("filter", n, "smudge"), "cat"),
                (key("filter", n, "process"), ""),
                (key("filter", n, "required"), "false"),
            ],
            Driver::Diff(n) => vec![
                (key("diff", n, "textconv"), ""),
                (key("diff", n, "command"), ""),
            ],
            // The merge is then a conflict for the agent to resolve, never a program
            // of the project's.
            Driver::Merge(n) => vec![(key("merge", n, "driver"), "false")],
        }
    }

    /// `filter` (or `diff`, `merge`) and a name → the driver.
    fn of(kind: &str, name: Vec<u8>) -> Option<Driver> {
        if name.is_empty() || name.contains(&b'\n') {
            return None;
        }
        match kind {
            "filter" => Some(Driver::Filter(name)),
            "diff" => Some(Driver::Diff(name)),
            "merge" => Some(Driver::Merge(name)),
            _ => None,
        }
    }
}

/// What was found in a repository, and the files it was found in as they were then.
struct Known {
    files: Vec<(PathBuf, Seen)>,
    drivers: Vec<Driver>,
}

/// A configuration file as it was seen.
#[derive(Debug)]
enum Seen {
    Missing,
    Read(Vec<u8>),
    /// There, but not read (not a regular file, or larger than [`LARGEST`]): never
    /// the same as anything, so what it holds is asked again at every command.
    Unread,
}

impl Seen {
    fn of(path: &Path) -> Seen {
        match (contents(path), path.symlink_metadata()) {
            (Some(c), _) => Seen::Read(c),
            (None, Err(_)) => Seen::Missing,
            (None, Ok(_)) => Seen::Unread,
        }
    }

    fn same(&self, other: &Seen) -> bool {
        match (self, other) {
            (Seen::Missing, Seen::Missing) => true,
            (Seen::Read(a), Seen::Read(b)) => a == b,
            _ => false,
        }
    }
}

/// The largest configuration file compared by its contents; a larger one is read
/// again every time.
const LARGEST: u64 = 1 << 20;

fn contents(path: &Path) -> Option<Vec<u8>> {
    // By type before opening: a FIFO would block the read.
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > LARGEST {
        return None;
    }
    std::fs::read(path).ok()
}

/// The drivers the repository whose git directories are `dirs` (its own and its common
/// one: [`super::hermetic::git_dirs`]) defines, for a git run in `dir`; `pin`: the
/// common directory git is held to, if it is told one.
pub(crate) fn of(dir: &Path, dirs: &(PathBuf, PathBuf), pin: Option<&Path>) -> Vec<Driver> {
    static KNOWN: Mutex<Option<HashMap<(PathBuf, PathBuf), Known>>> = Mutex::new(None);
    let unchanged = |k: &Known| k.files.iter().all(|(p, c)| Seen::of(p).same(c));
    if let Some(k) = KNOWN.lock().unwrap().get_or_insert_default().get(dirs)
        && unchanged(k)
    {
        return k.drivers.clone();
    }
    let (gitdir, common) = dirs;
    let mut drivers = Vec::new();
    let mut files = vec![
        common.join("config"),
        common.join("config.worktree"),
        gitdir.join("config.worktree"),
    ];
    let mut seen = Vec::new();
    for f in files.clone() {
        read(&f, 0, &mut seen, &mut drivers);
    }
    files.extend(seen);
    files.sort();
    files.dedup();
    // Read before git is asked: a file changed while git reads it is read again at
    // the next command.
    let before: Vec<(PathBuf, Seen)> = files.iter().map(|f| (f.clone(), Seen::of(f))).collect();
    // Kept only if every file git read is one of those: else git is asked at every
    // command (agentloop's reader missed an include, which is rare).
    let mut keep = true;
    // Git is asked only where a file could define a driver or include another: no
    // process at all for most repositories.
    let mut asked: Vec<Option<PathBuf>> = Vec::new();
    if before.iter().any(|(_, c)| may_define(c)) {
        asked.push(None);
    }
    let mut i = 0;
    while i < asked.len() && i < 16 {
        let listing = listed(dir, pin, asked[i].as_deref());
        i += 1;
        let Some(listing) = listing else { continue };
        for d in listing.drivers {
            if !drivers.contains(&d) {
                drivers.push(d);
            }
        }
        for (inc, conditional) in listing.includes {
            keep &= files.contains(&inc);
            if conditional && !asked.iter().any(|a| a.as_ref() == Some(&inc)) {
                asked.push(Some(inc));
            }
        }
    }
    keep &= before.iter().all(|(p, c)| Seen::of(p).same(c));
    let mut known = KNOWN.lock().unwrap();
    let known = known.get_or_insert_default();
    if keep {
        let k = Known {
            files: before,
            drivers: drivers.clone(),
        };
        known.insert(dirs.clone(), k);
    } else {
        known.remove(dirs);
    }
    drivers
}

/// Whether a configuration file could define a driver or include a file, by the
/// section headers only that do (`[filter`, `[diff`, `[merge`, `[include`, in any
/// case and with any whitespace: a header is the one way to open a section). A file
/// that is there but was not read (not a regular file, too large) could.
fn may_define(seen: &Seen) -> bool {
    let c = match seen {
        Seen::Missing => return false,
        Seen::Unread => return true,
        Seen::Read(c) => c,
    };
    let squeezed: Vec<u8> = c
        .iter()
        .filter(|b| !b.is_ascii_whitespace())
        .map(u8::to_ascii_lowercase)
        .collect();
    [&b"[filter"[..], b"[diff", b"[merge", b"[include"]
        .iter()
        .any(|h| squeezed.windows(h.len()).any(|w| w == *h))
}

/// What git lists of one configuration: the drivers it defines, and the files it
/// includes (each with whether its include has a condition).
struct Listing {
    drivers: Vec<Driver>,
    includes: Vec<(PathBuf, bool)>,
}

/// Git's own reading of the repository's configuration as a git in `dir` reads it
/// (`file`: of that one file and what it includes, as `git config --file` reads it).
/// No system or global configuration, as agentloop's git has none.
fn listed(dir: &Path, pin: Option<&Path>, file: Option<&Path>) -> Option<Listing> {
    let mut c = Command::new("git");
    c.args(["-c", "safe.directory=*", "config"]);
    if let Some(f) = file {
        contents(f)?;
        c.arg("--file").arg(f).arg("--includes");
    }
    c.args(["--null", "--show-origin", "--get-regexp"])
        .arg(r"^(filter|diff|merge|include|includeif)\.")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    if let Some(p) = pin {
        c.env("GIT_COMMON_DIR", p);
    }
    // Exit 1: nothing matched.
    let out = c.output().ok()?;
    Some(parse(dir, &out.stdout))
}

/// `git config --null --show-origin --get-regexp`'s output: `origin NUL key LF value
/// NUL` (a key without a value: `origin NUL key NUL`).
fn parse(dir: &Path, out: &[u8]) -> Listing {
    let mut listing = Listing {
        drivers: Vec::new(),
        includes: Vec::new(),
    };
    let mut fields = out.split(|b| *b == 0);
    while let (Some(origin), Some(entry)) = (fields.next(), fields.next()) {
        let (key, value) = match entry.iter().position(|b| *b == b'\n') {
            Some(i) => (&entry[..i], Some(&entry[i + 1..])),
            None => (entry, None),
        };
        // `section.sub.var`: the section and the variable never hold a dot, the
        // subsection may.
        let (Some(first), Some(last)) = (
            key.iter().position(|b| *b == b'.'),
            key.iter().rposition(|b| *b == b'.'),
        ) else {
            continue;
        };
        let section = String::from_utf8_lossy(&key[..first]).to_ascii_lowercase();
        let var = &key[last + 1..];
        match section.as_str() {
            "include" | "includeif" if var.eq_ignore_ascii_case(b"path") => {
                let (Some(v), Some(from)) = (value, origin.strip_prefix(b"file:")) else {
                    continue;
                };
                let from = dir.join(PathBuf::from(OsString::from_vec(from.to_vec())));
                let to = PathBuf::from(OsString::from_vec(v.to_vec()));
                let to = match to.strip_prefix("~") {
                    Ok(rest) => std::env::var_os("HOME")
                        .map(|h| PathBuf::from(h).join(rest))
                        .unwrap_or_default(),
                    Err(_) => from.parent().unwrap_or(Path::new("/")).join(to),
                };
                listing.includes.push((to, section == "includeif"));
            }
            kind if first < last => {
                if let Some(d) = Driver::of(kind, key[first + 1..last].to_vec())
                    && !listing.drivers.contains(&d)
                {
                    listing.drivers.push(d);
                }
            }
            _ => {}
        }
    }
    listing
}

/// agentloop's own reading of one configuration file and every file it includes,
/// whatever the include's condition.
fn read(path: &Path, depth: u32, seen: &mut Vec<PathBuf>, out: &mut Vec<Driver>) {
    if depth > 10 || seen.iter().any(|s| s == path) {
        return;
    }
    seen.push(path.to_path_buf());
    let Some(text) = contents(path) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let text = text.trim_start_matches('\u{feff}');
    let mut section = String::new();
    for line in text.lines() {
        let l = line.trim();
        let (head, rest) = match header(l) {
            Some((kind, sub, rest)) => {
                section = kind.clone();
                if let Some(d) = sub.and_then(|s| Driver::of(&kind, s.into_bytes()))
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
            // A quoted path ends at its quote, a bare one at a comment.
            let v = v.trim();
            let v = match v.strip_prefix('"') {
                Some(q) => q.split('"').next().unwrap_or(""),
                None => v.split(['#', ';']).next().unwrap_or("").trim(),
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn drivers(dir: &Path) -> Vec<Driver> {
        let dirs = super::super::hermetic::git_dirs(dir).unwrap();
        of(dir, &dirs, None)
    }

    #[test]
    fn drivers_are_read_from_the_config_and_what_it_includes() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
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

    /// Git's listing: names with dots and any bytes, keys without values, includes
    /// relative to the file that names them, with or without a condition.
    #[test]
    fn git_s_listing_is_read_as_it_writes_it() {
        let out = b"file:.git/config\0filter.a.b.clean\nx\0file:.git/config\0filter.\xff.required\0file:.git/config\0include.path\nmore.cfg\0file:/etc/x/y.cfg\0includeif.onbranch:z.path\n../c.cfg\0file:.git/config\0core.bare\nfalse\0";
        let l = parse(Path::new("/p"), out);
        assert_eq!(
            l.drivers,
            [Driver::Filter(b"a.b".to_vec()), Driver::Filter(vec![0xff])]
        );
        assert_eq!(
            l.includes,
            [
                (PathBuf::from("/p/.git/more.cfg"), false),
                (PathBuf::from("/etc/x/../c.cfg"), true)
            ]
        );
    }

    /// A branch's `merge = refs/heads/main` (in nearly every clone) is no driver; a
    /// header in any case and spacing is.
    #[test]
    fn only_a_section_header_could_define_a_driver() {
        let could = |c: &[u8]| may_define(&Seen::Read(c.to_vec()));
        assert!(!could(
            b"[core]\n\tbare = false\n[branch \"main\"]\n\tmerge = refs/heads/main\n"
        ));
        assert!(could(b"\xef\xbb\xbf[ FiLtEr \"x\"]"));
        assert!(could(b"[diff\n\"x\"]"));
        assert!(could(b"[includeIf \"onbranch:x\"] path = y"));
        assert!(could(b"[merge.x]"));
        assert!(!may_define(&Seen::Missing));
        assert!(may_define(&Seen::Unread));
    }
}
