//! The commit HEAD names, read from the repository's files without a git process (a
//! driver asks at each task's start and after each commit). Read only where the files
//! say it as git writes them and where git would read the same: a repository git's own
//! discovery could take otherwise, a format or an extension git checks, refs not kept
//! in files, a name or a file out of the ordinary, a branch not yet born — each of
//! those leaves the question to git (`git::tests::head_read_from_the_files_is_gits_answer`
//! holds the two together, and what an attack found that differed).

use std::io::ErrorKind;
use std::path::Path;

use super::{hermetic, locate};

/// Symbolic refs followed from HEAD (HEAD's own among them) before git is asked: git
/// itself follows five.
const HOPS: usize = 4;

/// The commit HEAD names in the work tree at (or above) `dir`, when the repository's
/// files tell it plainly; `None`: ask git.
pub fn head_on_disk(dir: &Path) -> Option<String> {
    let also_told = [
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_NAMESPACE",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if locate::told() || also_told {
        return None;
    }
    let (own, common) = hermetic::git_dirs(dir)?;
    if !found_as_git_finds(dir, &own, &common) {
        return None;
    }
    let id_len = id_len(&common)?;
    let is_id =
        |s: &str| s.len() == id_len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let mut file = own.join("HEAD");
    for hop in 0..=HOPS {
        if !std::fs::symlink_metadata(&file).ok()?.is_file() {
            return None;
        }
        let text = text(&file, 4096)?;
        // Every line git writes ends so.
        let line = text.strip_suffix('\n')?;
        let Some(target) = line.strip_prefix("ref: ") else {
            return is_id(line).then(|| line.to_string());
        };
        if hop == HOPS || !plain_shared_ref(target) {
            return None;
        }
        file = common.join(target);
        match std::fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return packed(&common, target, is_id),
            // A directory of refs below the name, a link, anything else.
            _ => return None,
        }
    }
    None
}

/// A branch, tag or remote-tracking ref whose name holds nothing git might read
/// otherwise: ASCII letters, digits, `-`, `_`, `.` and `/`; no component empty,
/// starting with a dot, or ending with a dot or `.lock`; no `..`.
fn plain_shared_ref(name: &str) -> bool {
    let shared = ["refs/heads/", "refs/tags/", "refs/remotes/"]
        .iter()
        .any(|p| name.starts_with(p));
    shared
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && !name.contains("..")
        && name.split('/').all(|c| {
            !c.is_empty() && !c.starts_with('.') && !c.ends_with('.') && !c.ends_with(".lock")
        })
}

/// `target`'s commit in `packed-refs`, when the file is as git writes it (a header
/// line or none, one ref a line in order, each peeled id on the line after its ref,
/// every line ended by a newline alone) and names it once. Not there: `None` as well
/// (a branch not yet born, or a ref git finds another way), for git to say.
fn packed(common: &Path, target: &str, is_id: impl Fn(&str) -> bool) -> Option<String> {
    let text = text(&common.join("packed-refs"), 64 << 20)?;
    if text.contains('\r') || !text.ends_with('\n') {
        return None;
    }
    let mut last: Option<&str> = None;
    let mut found = None;
    for (n, line) in text.lines().enumerate() {
        if n == 0 && line.starts_with("# pack-refs with:") {
            continue;
        }
        if let Some(peeled) = line.strip_prefix('^') {
            if last.is_none() || !is_id(peeled) {
                return None;
            }
            continue;
        }
        let (id, name) = line.split_once(' ')?;
        if !is_id(id) || last.is_some_and(|l| l >= name) {
            return None;
        }
        last = Some(name);
        if name == target {
            found = Some(id.to_string());
        }
    }
    found
}

/// Whether git, looking from `dir`, would take the repository `git_dirs` found
/// (`own`, `common`): the nearest `.git` above `dir` is its, no directory on the way
/// is a repository itself (git takes a bare one), the common directory has its
/// `objects` and `refs`, and a worktree's `.git` file and `commondir` point where git
/// would go with them as written.
fn found_as_git_finds(dir: &Path, own: &Path, common: &Path) -> bool {
    if !common.join("objects").is_dir() || !common.join("refs").is_dir() {
        return false;
    }
    if own != common {
        let Some(named) = text(&own.join("commondir"), 4096) else {
            return false;
        };
        let named = named.trim_end_matches(['\n', '\r']);
        if own.join(named).canonicalize().ok().as_deref() != Some(common) {
            return false;
        }
    }
    let Ok(start) = dir.canonicalize() else {
        return false;
    };
    for d in start.ancestors() {
        if std::fs::symlink_metadata(d.join("HEAD")).is_ok() && d.join("objects").exists() {
            return false;
        }
        let g = d.join(".git");
        let Ok(m) = std::fs::symlink_metadata(&g) else {
            continue;
        };
        if own == common {
            return m.is_dir() && g.canonicalize().ok().as_deref() == Some(common);
        }
        let Some(file) = m.is_file().then(|| text(&g, 4096)).flatten() else {
            return false;
        };
        let Some(path) = file.trim_end_matches(['\n', '\r']).strip_prefix("gitdir: ") else {
            return false;
        };
        return d.join(path).canonicalize().ok().as_deref() == Some(own);
    }
    false
}

/// How long the repository's object ids are, from its configuration as git checks it
/// (format version 0, or 1 with `objectformat` its only extension); `None` for
/// anything else, a value quoted or escaped among them.
fn id_len(common: &Path) -> Option<usize> {
    let config = text(&common.join("config"), 1 << 20)?;
    let (mut section, mut version, mut format) = (String::new(), 0, None);
    let mut extensions = 0;
    for line in config.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            section = rest.split(']').next()?.trim().to_ascii_lowercase();
            continue;
        }
        if section != "core" && section != "extensions" {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, "true"));
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        let read = section == "extensions" || key == "repositoryformatversion";
        if read && value.contains(['"', '\\', '#', ';']) {
            return None;
        }
        match (section.as_str(), key.as_str()) {
            ("core", "repositoryformatversion") => version = value.parse().ok()?,
            ("extensions", "objectformat") => {
                extensions += 1;
                format = Some(match value {
                    "sha1" => 40,
                    "sha256" => 64,
                    _ => return None,
                });
            }
            ("extensions", _) => return None,
            _ => {}
        }
    }
    match (version, extensions) {
        (0, 0) => Some(40),
        (1, 0) => Some(40),
        (1, 1) => format,
        _ => None,
    }
}

/// A regular file's text, at most `most` bytes (a FIFO or a device refused by its
/// type, never opened).
fn text(path: &Path, most: u64) -> Option<String> {
    let bytes = agentloop_ground::fsutil::read_regular(path, most).ok()?;
    String::from_utf8(bytes).ok()
}
