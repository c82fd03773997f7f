//! What a run keeps for the people who read it later (`progress.md`, the summary):
//! the risks and alternatives agents reported, when each learning came, the commits an
//! agent made itself, and each completion as it happened.

use super::event::AgentFinished;
use super::state::RunState;
use super::task::Pattern;
use agentloop_ground::words::{money, plural};

impl RunState {
    /// A failed iteration's kind of failure, counted across tasks.
    pub(super) fn remember_failure(&mut self, fingerprint: &str, task: &str, digest: &str) {
        let p = self.patterns.entry(fingerprint.to_string()).or_default();
        p.count += 1;
        if !p.tasks.iter().any(|t| t == task) {
            p.tasks.push(task.to_string());
        }
        if p.sample.is_empty() {
            // The digest's headline, without the lead-in to the output it quotes.
            let first = digest.lines().next().unwrap_or_default().trim();
            p.sample = first
                .strip_suffix("The end of its output:")
                .unwrap_or(first)
                .trim_end()
                .to_string();
        }
    }

    /// The kinds of failure worth a learning, most frequent first.
    pub fn learnable(&self) -> Vec<&Pattern> {
        let mut out: Vec<&Pattern> = self.patterns.values().filter(|p| p.learnable()).collect();
        out.sort_by_key(|p| std::cmp::Reverse(p.count));
        out
    }

    /// An agent's iteration ended: its learnings (with the time), what it reported, and
    /// a commit it made itself.
    pub(super) fn remember_agent(&mut self, a: &AgentFinished, time: &str) {
        for l in &a.signals.learnings {
            self.learnings.push(l.clone());
            self.learned_at.push(time.to_string());
        }
        let Some(open) = self.open_iteration(a.iteration) else {
            return;
        };
        let task = open.started.task.clone();
        let before = open.started.head_before.clone();
        for r in &a.signals.reported {
            let line = format!("{task} {r}");
            if !self.reported.contains(&line) {
                self.reported.push(line);
            }
        }
        if let Some(after) = a
            .head_after
            .as_ref()
            .filter(|h| before.as_ref() != Some(*h))
            && let Some(t) = self.task_mut(&task)
            && !t.agent_commits.contains(after)
        {
            t.agent_commits.push(after.clone());
        }
    }

    /// A task was completed: a line in the list that only grows.
    pub(super) fn remember_completed(&mut self, id: &str) {
        let Some(t) = self.task(id) else {
            return;
        };
        let commit = t
            .commit
            .as_deref()
            .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default();
        let own = if t.agent_commits.is_empty() {
            String::new()
        } else {
            format!(
                ", the agent's own commits up to {}",
                t.agent_commits
                    .last()
                    .map(|c| &c[..c.len().min(12)])
                    .unwrap_or_default()
            )
        };
        let line = format!(
            "{}: {} ({}, {}, {}{commit}{own}) at {}",
            t.id,
            t.title,
            plural(t.iterations as usize, "iteration", "iterations"),
            humantime::format_duration(std::time::Duration::from_secs(t.active_ms / 1000)),
            money(t.cost_usd),
            self.updated
        );
        self.completed_log.push(line);
    }
}
