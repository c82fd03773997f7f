//! The reviewer's copy: the verified tree with every file that configures an agent CLI
//! (`agentloop_project::agent_files`) at the baseline's version, or gone where the
//! baseline had none. A worker's planted `CLAUDE.md` or `.claude/settings.json` hook
//! then never reaches the CLI that judges its work.

use super::{CleanCopy, git, run};

/// A tree with the agent files laid back.
pub struct ReviewTree {
    /// The tree the reviewer reads.
    pub tree: String,
    /// The worker's agent files that are not in it as the worker left them.
    pub held_back: Vec<String>,
}

/// `path → "mode blob"` of the agent files in `tree`.
fn agent_entries(
    copy: &CleanCopy,
    tree: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut c = git(&copy.root);
    c.args(["ls-tree", "-r", "-z", "--full-tree", tree]);
    let out = run(c, None)?;
    Ok(out
        .split('\0')
        .filter_map(|e| {
            let (info, path) = e.split_once('\t')?;
            let mut f = info.split(' ');
            let (mode, _kind, blob) = (f.next()?, f.next()?, f.next()?);
            agentloop_project::agent_files::configures_agent(path)
                .then(|| (path.to_string(), format!("{mode} {blob}")))
        })
        .collect())
}

impl CleanCopy {
    /// `tree` with its agent files as `base` (the tree the run was created on; `None`:
    /// no agent file at all) has them, written into the object store.
    pub fn without_agent_files(
        &self,
        tree: &str,
        base: Option<&str>,
    ) -> Result<ReviewTree, String> {
        let now = agent_entries(self, tree)?;
        let then = match base {
            Some(b) => agent_entries(self, b)?,
            None => Default::default(),
        };
        let held_back: Vec<String> = now
            .iter()
            .filter(|(p, e)| then.get(*p) != Some(e))
            .map(|(p, _)| p.clone())
            .chain(then.keys().filter(|p| !now.contains_key(*p)).cloned())
            .collect();
        if held_back.is_empty() {
            return Ok(ReviewTree {
                tree: tree.to_string(),
                held_back,
            });
        }
        // The copy's own index file (`tree_now` is done with it), which a run's end
        // removes with the copy should a kill leave it.
        let index = self.index();
        let with_index = |args: &[&str]| {
            let mut c = git(&self.root);
            c.env("GIT_INDEX_FILE", &index).args(args);
            c
        };
        run(with_index(&["read-tree", tree]), None)?;
        let gone: String = now.keys().map(|p| format!("{p}\0")).collect();
        if !gone.is_empty() {
            run(
                with_index(&["update-index", "--force-remove", "-z", "--stdin"]),
                Some(gone.as_bytes()),
            )?;
        }
        let back: String = then.iter().map(|(p, e)| format!("{e}\t{p}\n")).collect();
        if !back.is_empty() {
            run(
                with_index(&["update-index", "--add", "--index-info"]),
                Some(back.as_bytes()),
            )?;
        }
        let tree = run(with_index(&["write-tree"]), None);
        let _ = std::fs::remove_file(&index);
        Ok(ReviewTree {
            tree: tree?,
            held_back,
        })
    }
}
