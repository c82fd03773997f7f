//! What the short way asks git, in one process each and only when it must: what the
//! index says of a path, what the rules ignore, what the attributes convert.

use std::collections::HashSet;
use std::path::Path;

use super::{Full, Kept};
use crate::surface::Stat;

/// A git command's `-z` output, each entry whole (not trimmed); `Err` when it failed
/// or a name is not UTF-8.
pub(super) fn git_z(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<String>, Full> {
    let mut c = agentloop_exec::git::git_command(dir);
    c.args(args);
    entries(&agentloop_exec::git::run_git(c, input).map_err(|_| ())?)
}

/// `-z` output's entries, each UTF-8.
fn entries(out: &[u8]) -> Result<Vec<String>, Full> {
    out.split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| String::from_utf8(e.to_vec()).map_err(|_| ()))
        .collect()
}

/// `paths` as `--stdin -z` input.
fn z_input(paths: &[String]) -> Vec<u8> {
    paths.iter().flat_map(|p| p.bytes().chain([0])).collect()
}

/// Which of `paths` (relative to `dir`) git ignores: untracked and matched by a rule.
pub(super) fn ignored(dir: &Path, paths: &[String]) -> Result<HashSet<String>, Full> {
    let mut c = agentloop_exec::git::git_command(dir);
    c.args(["check-ignore", "-z", "--stdin"]);
    let out = agentloop_exec::git::git_output(c, Some(&z_input(paths))).map_err(|_| ())?;
    // 1: none of them is ignored.
    match out.status.code() {
        Some(0) | Some(1) => Ok(entries(&out.stdout)?.into_iter().collect()),
        _ => Err(()),
    }
}

/// `Err` when git's attributes would make it write any of `paths` (files of the
/// project under `root`) with other bytes than the file's: `ident`, an encoding, an
/// end of line (`eol=crlf`; `text` or `eol=lf` where the file has a carriage return).
pub(super) fn converted(root: &Path, paths: &[String]) -> Result<(), Full> {
    let out = git_z(
        root,
        &[
            "check-attr",
            "-z",
            "--stdin",
            "text",
            "eol",
            "crlf",
            "ident",
            "working-tree-encoding",
        ],
        Some(&z_input(paths)),
    )?;
    for t in out.chunks(3) {
        let [path, attr, value] = t else {
            return Err(());
        };
        let plain = matches!(value.as_str(), "unspecified" | "unset");
        let converts = match attr.as_str() {
            "text" | "eol" if value == "crlf" => true,
            "text" | "eol" if !plain => {
                std::fs::read(root.join(path)).map_or(true, |b| b.contains(&b'\r'))
            }
            "text" | "eol" => false,
            _ => !plain,
        };
        if converts {
            return Err(());
        }
    }
    Ok(())
}

impl Kept {
    /// Reads the project's index again if it changed since it was last read.
    pub(super) fn read_index(&mut self, root: &Path) -> Result<(), Full> {
        let stat = Stat::of(&self.index.0);
        if stat.is_some() && stat == self.index.1 {
            return Ok(());
        }
        let listed = git_z(root, &["ls-files", "-v", "-z"], None)?;
        self.in_index.clear();
        self.flagged.clear();
        for e in listed {
            let (tag, path) = e.split_once(' ').ok_or(())?;
            if tag.chars().any(|c| c.is_ascii_lowercase()) || tag == "S" {
                self.flagged.insert(path.to_string());
            }
            self.in_index.insert(path.to_string());
        }
        self.index.1 = stat;
        Ok(())
    }
}
