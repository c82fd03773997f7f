//! Mock forges on 127.0.0.1, each backed by a real bare git repository on disk: GitHub
//! (`github`) and GitLab (`gitlab`); and Linear's GraphQL API (`linear`). What they share: git in the bare repository, the
//! CI that runs a script on a checkout of a commit, merges made there, and answers.

pub mod github;
pub mod gitlab;
pub mod linear;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

pub(crate) fn header(k: &str, v: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("valid header")
}

pub(crate) fn git(bare: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(bare)
        .args(args)
        .env("GIT_AUTHOR_NAME", "GitHub")
        .env("GIT_AUTHOR_EMAIL", "noreply@github.invalid")
        .env("GIT_COMMITTER_NAME", "GitHub")
        .env("GIT_COMMITTER_EMAIL", "noreply@github.invalid")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(crate) struct Reply {
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
}

pub(crate) fn reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        body,
        headers: Vec::new(),
    }
}

/// One page of `items` (`per_page`, `page`), with the `Link` to the next.
pub(crate) fn page(items: Vec<Value>, q: &dyn Fn(&str) -> Option<String>, path: &str) -> Reply {
    let per = q("per_page")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let n = q("page")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let slice: Vec<Value> = items
        .iter()
        .skip((n - 1) * per)
        .take(per)
        .cloned()
        .collect();
    let mut r = reply(200, Value::Array(slice));
    if items.len() > n * per {
        r.headers.push((
            "link".into(),
            format!("<{path}?per_page={per}&page={}>; rel=\"next\"", n + 1),
        ));
    }
    r
}

/// Runs the CI script on a checkout of `sha`: (passed, output).
pub(crate) fn run_ci(bare: &Path, sha: &str, script: &str) -> (bool, String) {
    let Ok(dir) = tempfile::tempdir() else {
        return (false, "cannot make a checkout".into());
    };
    let ok = Command::new("git")
        .args(["clone", "-q"])
        .arg(bare)
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("git")
            .args(["-c", "advice.detachedHead=false", "checkout", "-q", sha])
            .current_dir(dir.path())
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        return (false, format!("cannot check out {sha}"));
    }
    match Command::new("sh")
        .args(["-c", script])
        .current_dir(dir.path())
        .output()
    {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            (out.status.success(), text)
        }
        Err(e) => (false, e.to_string()),
    }
}

/// Merges `head` into branch `base` of the bare repository: a merge commit, or one
/// commit on top of the base for squash and rebase. `None` when it conflicts.
pub(crate) fn merge(
    bare: &Path,
    base: &str,
    head: &str,
    message: &str,
    method: &str,
) -> Option<String> {
    let base_ref = format!("refs/heads/{base}");
    let base = git(bare, &["rev-parse", &base_ref])?;
    let tree = git(bare, &["merge-tree", "--write-tree", &base, head])?;
    let tree = tree.lines().next()?.to_string();
    let sha = if method == "merge" {
        git(
            bare,
            &["commit-tree", &tree, "-p", &base, "-p", head, "-m", message],
        )?
    } else {
        git(bare, &["commit-tree", &tree, "-p", &base, "-m", message])?
    };
    git(bare, &["update-ref", &base_ref, &sha, &base])?;
    Some(sha)
}
