//! What the simulated services hold: the forge a run ships through (branches, pull
//! requests, the base branch) and the issue tracker it keeps in step. The steps that
//! change them are the simulated driver's (`ship`, `tracker`); the forge answers as
//! GitHub would.

use std::collections::{BTreeMap, BTreeSet};

/// A pull request on the simulated forge.
#[derive(Debug, Clone, PartialEq)]
pub struct Pr {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub labels: BTreeSet<String>,
    pub reviewers: BTreeSet<String>,
    /// Comments posted (the diff gates' holds).
    pub comments: u32,
    /// Who approved it on the forge.
    pub approvals: Vec<String>,
    /// The head commit it was merged with, and the base branch's head after.
    pub merged: Option<(String, String)>,
}

/// The simulated forge: what the remote and the pull requests hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Forge {
    /// Remote branches and their commits (the base branch apart).
    pub branches: BTreeMap<String, String>,
    pub prs: Vec<Pr>,
    /// The base branch's heads after each merge, oldest first.
    pub base: Vec<String>,
}

/// A content id: the same work has the same id in every run of a scenario.
pub(super) fn id(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

impl Forge {
    /// The base branch's head.
    pub fn head(&self) -> String {
        self.base.last().cloned().unwrap_or_else(|| "main".into())
    }

    /// The open pull request from `head`, else a new one: (number, created).
    pub(super) fn open_or_update(&mut self, head: &str, base: &str) -> (u64, bool) {
        if let Some(pr) = self
            .prs
            .iter()
            .find(|p| p.head == head && p.merged.is_none())
        {
            return (pr.number, false);
        }
        let number = self.prs.len() as u64 + 1;
        self.prs.push(Pr {
            number,
            head: head.into(),
            base: base.into(),
            labels: BTreeSet::new(),
            reviewers: BTreeSet::new(),
            comments: 0,
            approvals: Vec::new(),
            merged: None,
        });
        (number, true)
    }

    pub(super) fn pr(&mut self, number: u64) -> Option<&mut Pr> {
        self.prs.iter_mut().find(|p| p.number == number)
    }

    pub(super) fn find(&self, number: u64) -> Option<&Pr> {
        self.prs.iter().find(|p| p.number == number)
    }

    /// The base branch's head after pull request `number` was merged, if it was (what
    /// the driver asks when the forge refuses a second merge).
    pub(super) fn merged(&self, number: u64) -> Option<String> {
        Some(self.find(number)?.merged.clone()?.1)
    }

    /// Merges pull request `number` at `commit`: the base branch's new head. A merged
    /// one is refused, as a head that moved since.
    pub(super) fn merge(&mut self, number: u64, commit: &str) -> Result<String, String> {
        let at = self.head();
        let pr = self.find(number).ok_or("404 Not Found")?;
        if pr.merged.is_some() {
            return Err("405 Pull Request is not mergeable".into());
        }
        if self.branches.get(&pr.head).map(String::as_str) != Some(commit) {
            return Err("409 Head branch was modified".into());
        }
        let head = id(&format!("{at}+{commit}"));
        self.base.push(head.clone());
        if let Some(pr) = self.pr(number) {
            pr.merged = Some((commit.into(), head.clone()));
        }
        Ok(head)
    }
}

/// An issue on the simulated tracker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Issue {
    /// Where it was moved last (`started`, `blocked`, `done`, `skipped`).
    pub state: Option<String>,
    pub comments: u32,
}

/// The simulated tracker: issues by key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tracker {
    pub issues: BTreeMap<String, Issue>,
}
