//! The ship flow's effects: push the run's work, open or update the pull request, wait
//! for the forge's checks, poll the review, merge, verify the base branch after the
//! merge, and write the handoff. With `pr = "task"` each task goes through the same
//! steps on a branch and pull request of its own (`unit`). Each step records what happened (or `ship_failed`,
//! which waits for a person); the policy decides the next one.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agentloop_config::{Forge as ForgeKind, MergeMethod, Ship};
use agentloop_exec::git::run as git;
use agentloop_forge::github::{API, GitHub};
use agentloop_forge::gitlab::GitLab;
use agentloop_forge::{ChecksState, Forge};
use agentloop_journal::{CheckOutcome, Event};
use agentloop_policy::ShipStep;
use agentloop_verify::verify;

use super::Driver;
use crate::error::CliError;

mod unit;

/// How many looks at a commit with no checks at all before it counts as having none.
const NO_CHECKS_LOOKS: u32 = 3;
/// The most of a check's output the journal keeps.
const CHECK_OUTPUT: usize = 8 * 1024;

/// The forge the run ships through, with its token from the environment.
pub(crate) fn forge(root: &Path, ship: &Ship) -> Result<Box<dyn Forge>, String> {
    let (vars, name): (&[&str], &str) = match ship.forge {
        ForgeKind::Github => (&["GITHUB_TOKEN", "GH_TOKEN"], "GitHub"),
        ForgeKind::Gitlab => (&["GITLAB_TOKEN"], "GitLab"),
        ForgeKind::None => return Err("[ship] names no forge".into()),
    };
    let token = vars
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .ok_or_else(|| format!("no {name} token: set {}", vars.join(" or ")))?;
    let repo = match &ship.repo {
        Some(r) => r.clone(),
        None => {
            let url = git(root, &["remote", "get-url", &ship.remote])?;
            agentloop_forge::remote::repo_from_url(&url).ok_or_else(|| {
                format!(
                    "cannot tell OWNER/NAME from the URL of remote {}: {url}; set [ship] repo",
                    ship.remote
                )
            })?
        }
    };
    Ok(match ship.forge {
        ForgeKind::Gitlab => Box::new(GitLab::new(
            ship.api_url
                .as_deref()
                .unwrap_or(agentloop_forge::gitlab::API),
            &repo,
            &token,
        )),
        _ => Box::new(GitHub::new(
            ship.api_url.as_deref().unwrap_or(API),
            &repo,
            &token,
        )),
    })
}

/// The branch a run's pull request goes into: `[ship] base`, else the branch `root` is on.
fn base_of(root: &Path, ship: &Ship) -> Result<String, String> {
    if let Some(b) = &ship.base {
        return Ok(b.clone());
    }
    let b = git(root, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    if b == "HEAD" {
        return Err("the repository is on no branch; set [ship] base".into());
    }
    Ok(b)
}

/// Asks the forge, before a run starts, whether shipping can work: the token, the
/// repository and the user's right to push to it, the base branch. Returns who the
/// token is.
pub(crate) fn preflight(root: &Path, ship: &Ship) -> Result<String, String> {
    let base = base_of(root, ship)?;
    let f = forge(root, ship)?;
    let answer = f.preflight(&base).map_err(|e| e.to_string())?;
    Ok(answer.user)
}

fn method(m: MergeMethod) -> agentloop_forge::MergeMethod {
    match m {
        MergeMethod::Squash => agentloop_forge::MergeMethod::Squash,
        MergeMethod::Merge => agentloop_forge::MergeMethod::Merge,
        MergeMethod::Rebase => agentloop_forge::MergeMethod::Rebase,
    }
}

fn cap(text: &str) -> String {
    let cut = text.len().saturating_sub(CHECK_OUTPUT);
    let cut = (cut..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[cut..].to_string()
}

impl Driver {
    fn ship_cfg(&self) -> &Ship {
        &self.state.settings.ship
    }

    /// The branch the pull request goes into: `[ship] base`, else the branch the run
    /// works on.
    fn ship_base(&self) -> Result<String, String> {
        base_of(&self.ws.root, self.ship_cfg())
    }

    /// Does one step and records its outcome.
    pub(crate) fn ship(&mut self, step: ShipStep) -> Result<(), CliError> {
        let outcome = match step {
            ShipStep::StartUnit => self.ship_start_unit(),
            ShipStep::Push => self.ship_push(),
            ShipStep::OpenPr => self.ship_open_pr(),
            ShipStep::AwaitChecks => self.ship_await_checks(),
            ShipStep::CheckDiffGates => self.ship_diff_gates(),
            ShipStep::ReleaseGates => self.ship_release(),
            ShipStep::Merge => self.ship_merge(),
            ShipStep::PostMergeVerify => self.ship_post_merge(),
        };
        match outcome {
            Ok(Some(event)) => self.record(event),
            // Stopped while waiting: the policy sees the stop next.
            Ok(None) => Ok(()),
            Err(message) => {
                let step = match step {
                    ShipStep::StartUnit => "starting the next task's pull request",
                    ShipStep::Push => "push",
                    ShipStep::OpenPr => "opening the pull request",
                    ShipStep::AwaitChecks => "waiting for the checks",
                    ShipStep::CheckDiffGates => "reading the diff for its gates",
                    ShipStep::ReleaseGates => "taking the released gates' labels off",
                    ShipStep::Merge => "the merge",
                    ShipStep::PostMergeVerify => "the verification after the merge",
                };
                self.progress
                    .warn(&format!("ship: {step} failed: {message}"));
                self.record(Event::ShipFailed {
                    step: step.into(),
                    message,
                })
            }
        }
    }

    /// The commit to ship: the unit's branch head (`pr = "task"`; `None` when its
    /// change is already on the base), the integration branch's head (the journal's)
    /// in a run with workers, else the working tree's HEAD (where each verified iteration was
    /// committed).
    fn ship_commit(&self) -> Result<Option<String>, String> {
        if let Some(unit) = &self.state.ship.unit {
            return self.unit_commit(unit);
        }
        match &self.state.integration {
            // As the journal has it, not as the branch's ref says.
            Some(i) => Ok(i.head.clone()),
            None => git(&self.ws.root, &["rev-parse", "HEAD"]),
        }
        .map(Some)
    }

    /// The branch pushed and proposed: the unit's, or the run's.
    fn ship_branch(&self) -> String {
        match &self.state.ship.unit {
            Some(u) => u.branch.clone(),
            None => self.ship_cfg().branch_of(&self.run.id),
        }
    }

    fn ship_push(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let Some(commit) = self.ship_commit()? else {
            let task = self.state.ship.unit.as_ref().map(|u| u.task.clone());
            self.progress.note(&format!(
                "ship: task {} has nothing to propose: its change is on the base branch already",
                task.as_deref().unwrap_or("?")
            ));
            return Ok(Some(Event::TaskShipped {
                task: task.unwrap_or_default(),
                empty: true,
            }));
        };
        let branch = self.ship_branch();
        git(
            &self.ws.root,
            &[
                "push",
                "--force",
                "--quiet",
                &cfg.remote,
                &format!("{commit}:refs/heads/{branch}"),
            ],
        )?;
        Ok(Some(Event::ShipPushed { branch, commit }))
    }

    /// The pull request's title and account, as the journal has them now.
    fn pr_account(&self) -> (String, String) {
        match &self.state.ship.unit {
            Some(u) => (
                self.state
                    .plan_task(&u.task)
                    .map_or(u.task.clone(), |t| format!("{}: {}", t.id, t.title)),
                agentloop_journal::unit_pr_body(&self.state),
            ),
            None => (
                self.state.plan.title.clone(),
                agentloop_journal::pr_body(&self.state),
            ),
        }
    }

    fn ship_open_pr(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let f = forge(&self.ws.root, &cfg)?;
        let head = self.ship_branch();
        let base = match &self.state.ship.unit {
            Some(u) => u.base.clone(),
            None => self.ship_base()?,
        };
        let (title, body) = self.pr_account();
        let (pr, created) = f
            .open_or_update(&head, &base, &title, &body, cfg.draft)
            .map_err(|e| e.to_string())?;
        // Labelled and its reviewers asked once: when it is new, or new to the journal
        // (a driver that opened it died before it could record it, or label it).
        let recorded = self.state.ship.pr.as_ref().map(|(n, _)| *n);
        if created || recorded != Some(pr.number) {
            f.add_labels(pr.number, &cfg.labels)
                .map_err(|e| e.to_string())?;
            f.request_reviewers(pr.number, &cfg.reviewers)
                .map_err(|e| e.to_string())?;
        }
        Ok(Some(Event::PrOpened {
            number: pr.number,
            url: pr.url,
            created,
        }))
    }

    /// Polls the pushed commit's checks until they are done, the timeout, or a stop.
    fn ship_await_checks(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let f = forge(&self.ws.root, &cfg)?;
        let Some((commit, _)) = self.state.ship.pushed.clone() else {
            return Err("nothing was pushed".into());
        };
        let started = Instant::now();
        let mut empty_looks = 0;
        self.progress
            .note(&format!("waiting for the forge's checks on {commit:.12}"));
        loop {
            let checks = f.checks(&commit).map_err(|e| e.to_string())?;
            let done = match checks.state {
                ChecksState::Pending if checks.checks.is_empty() => {
                    empty_looks += 1;
                    empty_looks >= NO_CHECKS_LOOKS
                }
                ChecksState::Pending => false,
                ChecksState::Success | ChecksState::Failure => true,
            };
            if done {
                return Ok(Some(Event::ChecksFinished {
                    commit,
                    passed: checks.state != ChecksState::Failure,
                    checks: checks
                        .checks
                        .into_iter()
                        .map(|c| CheckOutcome {
                            name: c.name,
                            conclusion: c.conclusion,
                            output: cap(&c.output),
                        })
                        .collect(),
                }));
            }
            if started.elapsed() >= cfg.checks_timeout {
                return Err(format!(
                    "the checks did not finish within {}",
                    humantime::format_duration(cfg.checks_timeout)
                ));
            }
            if self.wait_a_while(cfg.poll).map_err(|e| e.message)? {
                return Ok(None);
            }
        }
    }

    /// Sleeps `d` in small steps, taking control requests in; true when the run is to
    /// stop (or was interrupted).
    fn wait_a_while(&mut self, d: Duration) -> Result<bool, CliError> {
        let until = Instant::now() + d;
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
            self.poll_controls()?;
            if self.state.stop.is_some() || self.interrupted.load(Ordering::SeqCst) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// At the review gate, or a diff gate: an approving review from one of its
    /// reviewers (the review gate's `[ship] reviewers`, a diff gate's own; anyone's when
    /// none is listed) releases it. Asked every `[ship] poll`.
    pub(crate) fn poll_review(&mut self, last: &mut Option<Instant>) -> Result<(), CliError> {
        let cfg = self.ship_cfg().clone();
        let gate = self.state.gate.clone();
        let (listed, diff_gate) = match &gate {
            Some(agentloop_journal::Gate::Review) => (cfg.reviewers.clone(), None),
            Some(agentloop_journal::Gate::Diff(g)) => (
                agentloop_policy::gate_reviewers(&self.state.settings.gates, g).to_vec(),
                Some(g.clone()),
            ),
            _ => return Ok(()),
        };
        if last.is_some_and(|t| t.elapsed() < cfg.poll) {
            return Ok(());
        }
        *last = Some(Instant::now());
        let Some((number, _)) = self.state.ship.pr.clone() else {
            return Ok(());
        };
        let approvals =
            forge(&self.ws.root, &cfg).and_then(|f| f.approvals(number).map_err(|e| e.to_string()));
        match approvals {
            Ok(who) => {
                if let Some(by) = who
                    .into_iter()
                    .find(|w| listed.is_empty() || listed.contains(w))
                {
                    self.record(match diff_gate {
                        Some(gate) => Event::DiffGateApproved { gate, by },
                        None => Event::ReviewApproved { by },
                    })?;
                }
            }
            Err(e) => self
                .progress
                .warn(&format!("ship: cannot read the reviews: {e}")),
        }
        Ok(())
    }

    /// What the shipped diff (from where it forks off the base branch) touches, gate by
    /// gate; the pull request is labelled `needs:GATE-review` for each, their reviewers
    /// asked, and a comment says which files and lines.
    fn ship_diff_gates(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let gates = self.state.settings.gates.clone();
        let Some((commit, _)) = self.state.ship.pushed.clone() else {
            return Err("nothing was pushed".into());
        };
        // A unit's diff is what it adds to where it starts.
        let input = match &self.state.ship.unit {
            Some(u) => super::gates::read_diff(&self.ws.root, &u.onto, &commit, false)?,
            None => {
                let base = self.ship_base()?;
                git(&self.ws.root, &["fetch", "--quiet", &cfg.remote, &base])?;
                let base_sha = git(&self.ws.root, &["rev-parse", "FETCH_HEAD"])?;
                super::gates::read_diff(&self.ws.root, &base_sha, &commit, true)?
            }
        };
        let triggered = agentloop_policy::triggered(&gates, &input);
        let mut names: Vec<String> = triggered.iter().map(|t| t.gate.clone()).collect();
        names.dedup();
        if gates.deploy.enabled && cfg.merge == agentloop_config::MergeWhen::Auto {
            names.push("deploy".into());
        }
        let fresh: Vec<String> = names
            .into_iter()
            .filter(|n| !self.state.ship.gates_approved.contains(n))
            .collect();
        if let Some((number, _)) = self.state.ship.pr.clone()
            && !fresh.is_empty()
        {
            let f = forge(&self.ws.root, &cfg)?;
            let labels: Vec<String> = fresh.iter().map(|g| format!("needs:{g}-review")).collect();
            f.add_labels(number, &labels).map_err(|e| e.to_string())?;
            let reviewers: Vec<String> = fresh
                .iter()
                .flat_map(|g| agentloop_policy::gate_reviewers(&gates, g).to_vec())
                .collect();
            f.request_reviewers(number, &reviewers)
                .map_err(|e| e.to_string())?;
            let mut comment = String::from("agentloop holds this pull request for review:\n\n");
            for g in &fresh {
                comment.push_str(&format!("**{g}**"));
                let who = agentloop_policy::gate_reviewers(&gates, g);
                if !who.is_empty() {
                    comment.push_str(&format!(
                        " (asked: {})",
                        who.iter()
                            .map(|w| format!("@{w}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                comment.push('\n');
                if g == "deploy" {
                    comment.push_str("- every merge into the base branch\n");
                }
                for t in triggered.iter().filter(|t| &t.gate == g) {
                    let at = t.line.map(|l| format!(":{l}")).unwrap_or_default();
                    comment.push_str(&format!("- `{}{at}`: {}\n", t.file, t.why));
                }
                comment.push('\n');
            }
            comment.push_str("An approving review from the gate's reviewers, or `agentloop approve --gate NAME`, releases it.");
            f.comment(number, &comment).map_err(|e| e.to_string())?;
        }
        Ok(Some(Event::DiffGatesChecked { commit, triggered }))
    }

    /// The diff gates released since the pull request was labelled for them: their
    /// labels come off, and its account is written again to say they passed. Both
    /// are the same when done twice (a driver that dies before it records does).
    fn ship_release(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let gates = agentloop_policy::to_release(&self.state);
        let Some((number, _)) = self.state.ship.pr.clone() else {
            return Err("no pull request to release".into());
        };
        let f = forge(&self.ws.root, &cfg)?;
        let labels: Vec<String> = gates.iter().map(|g| format!("needs:{g}-review")).collect();
        f.remove_labels(number, &labels)
            .map_err(|e| e.to_string())?;
        let (title, body) = self.pr_account();
        // By its number: a pull request a person closed meanwhile is not opened anew.
        f.update(number, &title, &body).map_err(|e| e.to_string())?;
        Ok(Some(Event::PrReleased { gates }))
    }

    fn ship_merge(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let f = forge(&self.ws.root, &cfg)?;
        let (Some((number, _)), Some((commit, _))) =
            (self.state.ship.pr.clone(), self.state.ship.pushed.clone())
        else {
            return Err("no pull request to merge".into());
        };
        // A driver that died after the forge merged and before `pr_merged` was
        // written merges again here: the forge refuses (it is merged), and says as
        // what commit.
        let merged = match f.merge(number, &commit, method(cfg.method)) {
            Ok(merged) => merged,
            Err(e) => match f.merged(number) {
                Ok(Some(merged)) => merged,
                _ => return Err(e.to_string()),
            },
        };
        if cfg.delete_branch {
            let branch = self.ship_branch();
            if let Err(e) = git(
                &self.ws.root,
                &["push", "--quiet", &cfg.remote, "--delete", &branch],
            ) {
                self.progress.warn(&format!("ship: the branch stays: {e}"));
            }
        }
        Ok(Some(Event::PrMerged { commit: merged }))
    }

    /// The run's checks (every task's and `[verify] commands`) on the base branch as the
    /// forge has it after the merge, in a worktree of its own.
    fn ship_post_merge(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let base = self.ship_base()?;
        git(&self.ws.root, &["fetch", "--quiet", &cfg.remote, &base])?;
        let commit = git(&self.ws.root, &["rev-parse", "FETCH_HEAD"])?;
        let dir: PathBuf = agentloop_ground::fsutil::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("agentloop/post-merge")
            .join(&self.run.id);
        let _ = git(
            &self.ws.root,
            &["worktree", "remove", "--force", &dir.to_string_lossy()],
        );
        let _ = std::fs::remove_dir_all(&dir);
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        git(
            &self.ws.root,
            &[
                "worktree",
                "add",
                "--detach",
                "--quiet",
                &dir.to_string_lossy(),
                &commit,
            ],
        )?;
        // One pull request per task: the checks of the tasks not shipped yet wait for
        // their own.
        let waiting = |id: &str| {
            self.state.settings.ship.pr == agentloop_config::PrScope::Task
                && !self.state.ship.has(id)
                && self.state.task(id).is_some_and(|t| t.commit.is_some())
        };
        let commands: Vec<String> = self
            .state
            .plan
            .tasks
            .iter()
            .filter(|t| !waiting(&t.id))
            .flat_map(|t| self.state.plan.checks(&t.id))
            .chain(self.state.settings.verify_commands.iter().cloned())
            .collect();
        let log = self.run.path.join("post-merge.log");
        let runner = verify::Runner {
            workdir: &dir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(1),
            log: &log,
            wrap: self.check_wrap(&dir, &self.reports_dir(0)),
            bytecode: self.bytecode(false),
            tests: None,
        };
        let interrupted = self.interrupted.clone();
        let result = runner.run(0, &commands, || interrupted.load(Ordering::SeqCst));
        let _ = git(
            &self.ws.root,
            &["worktree", "remove", "--force", &dir.to_string_lossy()],
        );
        let mut result = result.map_err(|e| e.to_string())?;
        result.redact(&self.redactor(&self.state.settings.agent.clone()));
        if !result.passed {
            self.progress.warn(&format!(
                "ship: the run's checks FAIL on {base} after the merge ({commit:.12}); see {}",
                log.display()
            ));
            if cfg.after_merge_failure == agentloop_config::AfterMergeFailure::Fix {
                // The fix is made on top of what the base branch has now.
                if git(&self.ws.root, &["merge", "--ff-only", "--quiet", &commit]).is_err() {
                    git(
                        &self.ws.root,
                        &[
                            "-c",
                            "user.name=agentloop",
                            "-c",
                            "user.email=agentloop@localhost",
                            "merge",
                            "--no-edit",
                            "--quiet",
                            &commit,
                        ],
                    )?;
                }
            }
        }
        Ok(Some(Event::PostMergeVerified {
            commit,
            passed: result.passed,
            digest: result.digest,
        }))
    }

    /// `handoff.md` in the run's directory (what was built, what was left, open
    /// questions, cost, links) and `summary.md` (the verdict and the criteria with
    /// their evidence).
    pub(crate) fn write_handoff(&self) {
        for (name, text) in [
            ("handoff.md", agentloop_journal::handoff(&self.state)),
            ("summary.md", agentloop_journal::summary(&self.state)),
        ] {
            let path = self.run.path.join(name);
            if let Err(e) = agentloop_ground::fsutil::write_atomic(&path, text.as_bytes()) {
                self.progress
                    .warn(&format!("cannot write {}: {e}", path.display()));
            }
        }
    }
}
