//! What people see: progress on stderr, data on stdout, errors with a hint.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use agentloop_ground::words::plural;
use agentloop_journal::Record;
use agentloop_journal::RunState;
use agentloop_journal::*;
use agentloop_policy::WaitReason;
use agentloop_workspace::RunDir;

use crate::error::CliError;

fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

pub fn paint(code: &str, text: &str) -> String {
    if color() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub fn error(e: &CliError) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{} {}", paint("1;31", "error:"), e.message);
    if let Some(h) = &e.hint {
        let _ = writeln!(
            err,
            "{} {}",
            paint("1;36", "hint:"),
            h.replace('\n', "\n      ")
        );
    }
}

pub fn warn(msg: &str) {
    eprintln!("{} {msg}", paint("1;33", "warning:"));
}

/// Writes one line of data to stdout. A reader that went away (`| head`) ends the
/// command quietly; a full disk or another failure is an error that says so — never
/// a panic.
pub fn out(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut o = std::io::stdout().lock();
    o.write_fmt(args)
        .and_then(|_| o.write_all(b"\n"))
        .and_then(|_| o.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                CliError::quiet()
            } else {
                CliError::internal(format!("cannot write to standard output: {e}"))
            }
        })
}

/// `println!` for data on stdout, returning the error instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::render::out(format_args!($($arg)*))?
    };
}

/// One journal record as a JSON line on stdout.
pub fn json_event(r: &Record) {
    let line = serde_json::json!({ "seq": r.seq, "time": r.time, "event": r.event });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub use agentloop_ground::words::money;

/// A run's time in words: its own wall time (what `max_duration` limits), then the time
/// in iterations — with workers added up over the lanes, and said so: `4m10s · agent
/// time 31m05s over 8 lanes`.
pub fn time_words(s: &agentloop_journal::RunState) -> String {
    if s.settings.in_worktrees() && s.settings.workers > 1 {
        format!(
            "{} · agent time {} over {} lanes",
            duration_ms(s.wall_ms),
            duration_ms(s.active_ms),
            s.settings.workers
        )
    } else {
        format!(
            "{} · {} in iterations",
            duration_ms(s.wall_ms),
            duration_ms(s.active_ms)
        )
    }
}

pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// The progress lines of a driver on stderr. On a terminal the last line is a live
/// status line (task i/N, iteration, elapsed, cost) redrawn while the agent works.
pub struct Progress {
    quiet: bool,
    live: bool,
    started: Instant,
    drawn: bool,
    last_tick: Instant,
    /// Iteration → task, to name the task a result is for when workers interleave.
    tasks: std::collections::HashMap<u32, String>,
    /// Said already: an agent spends tokens with no price, so the cost budget cannot
    /// guard the run.
    unpriced_said: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        Progress {
            quiet,
            live: std::io::stderr().is_terminal(),
            started: Instant::now(),
            drawn: false,
            last_tick: Instant::now(),
            tasks: std::collections::HashMap::new(),
            unpriced_said: false,
        }
    }

    fn line(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.drawn {
            let _ = write!(err, "\r\x1b[K");
            self.drawn = false;
        }
        let _ = writeln!(err, "{text}");
    }

    pub fn warn(&self, msg: &str) {
        if !self.quiet {
            warn(msg);
        }
    }

    /// Redraws the live line (at most once a second).
    pub fn tick(&mut self, s: &RunState) {
        if self.quiet || !self.live || self.last_tick.elapsed().as_millis() < 1000 {
            return;
        }
        self.last_tick = Instant::now();
        let Some(open) = s.current() else { return };
        let pos = s.position(&open.started.task);
        let text = format!(
            "  task {pos}/{} {} · iteration {} · {} elapsed · {}",
            s.plan.tasks.len(),
            open.started.task,
            open.started.iteration,
            duration_ms(self.started.elapsed().as_millis() as u64),
            money(s.cost_usd)
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", paint("2", &text));
        let _ = err.flush();
        self.drawn = true;
    }

    pub fn event(&mut self, s: &RunState, r: &Record) {
        if let Event::AgentFinished(a) = &r.event
            && !self.unpriced_said
            && a.usage.total() > 0
            && a.cost_usd == 0.0
        {
            self.unpriced_said = true;
            let agent = s
                .open_iteration(a.iteration)
                .map(|o| o.started.agent.clone())
                .unwrap_or_else(|| s.settings.agent.clone());
            let budget = s
                .settings
                .budgets
                .max_cost_usd
                .map(|b| format!("the {} cost budget", money(b)))
                .unwrap_or_else(|| "a cost budget".into());
            self.line(&format!(
                "agentloop: warning: agent {agent} used {} tokens and reported no cost, and [prices] has no price for its model: {budget} cannot guard this run (add [prices.\"MODEL\"] input = …, output = …, in dollars per million tokens)",
                a.usage.total()
            ));
        }
        match &r.event {
            Event::DriverStarted { .. } => {
                let text = format!(
                    "agentloop: run {} · {} · {} ({} done) · mode {}{}{}",
                    s.run_id,
                    s.plan.title,
                    plural(s.tasks.len(), "task", "tasks"),
                    s.done_count(),
                    s.settings.mode,
                    s.settings
                        .shape
                        .as_deref()
                        .map(|sh| format!(" · shape {sh}"))
                        .unwrap_or_default(),
                    s.settings
                        .workflow
                        .as_deref()
                        .map(|w| format!(" · workflow {w}"))
                        .unwrap_or_default(),
                );
                self.line(&text);
                if s.iterations == 0 {
                    self.line(&format!(
                        "agentloop: budget {} · state in .agentloop/runs/{}/ (`agentloop gc` clears what the run leaves elsewhere once it ends; deleting that directory forgets the run)",
                        budget_words(&s.settings.budgets),
                        s.run_id
                    ));
                }
                if let Some(p) = &s.prerequisites {
                    for m in &p.missing {
                        self.line(&format!(
                            "agentloop: warning: not found on this machine: {m}; that check cannot pass until it is installed"
                        ));
                    }
                    if p.dirty_count > 0 && !s.settings.in_worktrees() {
                        self.line(&format!(
                            "agentloop: note: the tree has {} uncommitted {} ({}{})",
                            plural(p.dirty_count, "change", "changes"),
                            if s.iterations == 0 {
                                "when the run starts"
                            } else {
                                "as this driver starts"
                            },
                            p.dirty
                                .iter()
                                .take(3)
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", "),
                            if p.dirty_count > 3 { ", …" } else { "" }
                        ));
                    }
                }
            }
            Event::IterationStarted(st) => {
                self.tasks.insert(st.iteration, st.task.clone());
                let pos = s.position(&st.task);
                let title = s
                    .task(&st.task)
                    .map(|t| t.title.clone())
                    .unwrap_or_default();
                let bound = s
                    .task(&st.task)
                    .filter(|t| t.tries > 1)
                    .map(|t| format!(" · {}", agentloop_policy::attempt_words(s, t)))
                    .unwrap_or_default();
                let kind = match st.kind {
                    IterationKind::Work | IterationKind::Retry => bound,
                    IterationKind::Replan => " · asking for a replan".into(),
                    IterationKind::Debug => match s.task(&st.task) {
                        // The agent (`NEXT_ACTION_NEEDED: DEBUG`) or a person asked.
                        Some(t) if t.debug_requested => " · debugging, as asked".into(),
                        // A bug's first iteration looks for the cause before anything
                        // failed.
                        Some(t) if t.last_fingerprint.is_none() => {
                            " · debugging: finding the cause before the fix".into()
                        }
                        _ => " · debugging the repeated failure".into(),
                    },
                    IterationKind::Fallback => format!(" · fallback agent {}", st.agent),
                };
                let text = format!(
                    "[{}] task {pos}/{} {}: {title}{kind} · {} · {}",
                    st.iteration,
                    s.plan.tasks.len(),
                    st.task,
                    duration_ms(self.started.elapsed().as_millis() as u64),
                    agentloop_policy::standing(s)
                );
                self.line(&text);
            }
            Event::IterationFinished(f) => {
                let (mark, code) = match f.outcome {
                    Outcome::Completed => ("✓", "32"),
                    Outcome::Failed => ("✗", "31"),
                    Outcome::Blocked => ("?", "33"),
                    Outcome::Replanned => ("↻", "36"),
                    Outcome::Aborted => ("-", "2"),
                    Outcome::Limited => ("…", "33"),
                };
                // With workers, results interleave: each says whose it is.
                let whose = match self.tasks.remove(&f.iteration) {
                    Some(task) if s.settings.in_worktrees() => {
                        format!("[{}] {task}: ", f.iteration)
                    }
                    _ => String::new(),
                };
                let text = format!("    {} {whose}{}", paint(code, mark), f.reason);
                self.line(&text);
                // A kind of failure that just came back the third time across tasks.
                if f.outcome == Outcome::Failed {
                    for pat in s.learnable().into_iter().filter(|p| p.count == 3) {
                        let text = format!("agentloop: pattern: {}", pat.hint());
                        self.line(&text);
                    }
                }
            }
            Event::Escalated {
                task,
                trigger,
                rung,
                ..
            } => {
                let what = match rung {
                    Rung::Retry => "retry".to_string(),
                    Rung::Replan => "ask the agent to replan it".to_string(),
                    Rung::Fallback => format!(
                        "hand it to {}",
                        s.settings.fallback_agent.clone().unwrap_or_default()
                    ),
                    Rung::Block => "block it until a person looks".to_string(),
                };
                let text = format!(
                    "    {} task {task}: {}; next: {what}",
                    paint("33", "!"),
                    trigger.describe()
                );
                self.line(&text);
            }
            Event::ReplanAccepted {
                task,
                version,
                added,
                ..
            } => {
                let text = format!(
                    "    replan accepted (plan v{version}): {task} → {}",
                    added.join(", ")
                );
                self.line(&text);
            }
            Event::ReplanRejected { reason, .. } => {
                let text = format!("    replan rejected: {reason}");
                self.line(&text);
            }
            Event::Control {
                request, source, ..
            } => {
                let text = format!(
                    "agentloop: {} (from {source})",
                    crate::describe::request(request)
                );
                self.line(&text);
            }
            Event::ShipPushed { .. }
            | Event::PrOpened { .. }
            | Event::ChecksFinished { .. }
            | Event::ShipFixAdded { .. }
            | Event::ReviewApproved { .. }
            | Event::DiffGatesChecked { .. }
            | Event::DiffGateApproved { .. }
            | Event::PrReleased { .. }
            | Event::PrMerged { .. }
            | Event::ShipUnitStarted { .. }
            | Event::TaskShipped { .. }
            | Event::PostMergeVerified { .. }
            | Event::ShipFailed { .. } => {
                let text = format!("ship: {}", crate::describe::event(&r.event));
                self.line(&text);
            }
            Event::ValidationFixAdded { .. } => {
                let text = format!("agentloop: {}", crate::describe::event(&r.event));
                self.line(&text);
            }
            Event::TaskDiffChecked { triggered, .. } if !triggered.is_empty() => {
                let text = format!("agentloop: {}", crate::describe::event(&r.event));
                self.line(&text);
            }
            _ => {}
        }
    }

    /// A line of its own (a step under way).
    pub fn note(&mut self, text: &str) {
        self.line(&format!("agentloop: {text}"));
    }

    pub fn waiting(&mut self, s: &RunState, reason: &WaitReason) {
        if let Some(text) = waiting_text(s, reason) {
            self.line(&text);
        }
    }

    /// The driver leaves a run that waits (`--no-wait`, a spent budget): however quiet,
    /// it says what the run waits for, which was not said yet under `--quiet`.
    pub fn leaving(&mut self, s: &RunState, reason: &WaitReason) {
        if self.quiet
            && let Some(text) = waiting_text(s, reason)
        {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }

    pub fn interrupted(&mut self, run: &str) {
        self.line(&format!(
            "agentloop: interrupted; `agentloop resume {run}` continues where this left off"
        ));
    }

    pub fn finished(&mut self, s: &RunState, run: &RunDir) {
        let reason = match &s.finished {
            Some(agentloop_journal::FinishReason::Completed) => s.completion_words(),
            Some(r) => r.describe(),
            None => String::new(),
        };
        let code = if s.status == RunStatus::Completed {
            "1;32"
        } else {
            "1;33"
        };
        let verdict = agentloop_journal::verdict(s);
        let text = format!(
            "agentloop: run {}: {reason} · {}/{} · {} · {} · {}\n  verdict: {} — {}\n  record: {}",
            paint(code, s.status.as_str()),
            s.done_count(),
            plural(s.tasks.len(), "task", "tasks"),
            plural(s.iterations as usize, "iteration", "iterations"),
            money(s.cost_usd),
            time_words(s),
            verdict.as_str(),
            verdict.meaning(),
            run.path.display()
        );
        // `--quiet` leaves out progress, not a failure: a run that did not complete
        // says why, however quiet.
        if self.quiet && s.status != RunStatus::Completed {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
            return;
        }
        self.line(&text);
        // Where the work of a run with workers is, and how to take it.
        if let Some(i) = &s.integration {
            if i.landed {
                self.line(&format!(
                    "  work: on branch {}, landed on your branch",
                    i.branch
                ));
            } else if s.done_count() > 0 {
                self.line(&format!(
                    "  work: on branch {} (every commit verified); `agentloop land` takes it onto your branch (`--dry-run` first)",
                    i.branch
                ));
            }
        }
    }
}

/// A run's budgets in words: "50 iterations · $25.00 · no time limit".
fn budget_words(b: &agentloop_ground::values::Budgets) -> String {
    let mut parts = vec![plural(b.max_iterations as usize, "iteration", "iterations")];
    parts.push(
        b.max_cost_usd
            .map(money)
            .unwrap_or_else(|| "no cost limit".into()),
    );
    if let Some(t) = b.max_tokens {
        parts.push(format!("{t} tokens"));
    }
    parts.push(
        b.max_duration
            .map(|d| humantime::format_duration(d).to_string())
            .unwrap_or_else(|| "no time limit".into()),
    );
    parts.join(" · ")
}

/// What a run that waits waits for, in words (`None`: workers, which say nothing).
fn waiting_text(s: &RunState, reason: &WaitReason) -> Option<String> {
    let text = match reason {
        WaitReason::Paused => "agentloop: paused; `agentloop resume` continues".to_string(),
        WaitReason::Budget {
            budget,
            used,
            limit,
        } => format!(
            "agentloop: paused, {} ({}); `agentloop resume --budget +10` (or --tokens, --time, --iterations) tops it up",
            WaitReason::budget_words(budget, *used, *limit),
            agentloop_policy::standing(s)
        ),
        WaitReason::UsageLimit { until_ms } => {
            let until = std::time::UNIX_EPOCH + std::time::Duration::from_millis(*until_ms);
            let left = until
                .duration_since(std::time::SystemTime::now())
                .map(|d| d.as_secs())
                .unwrap_or(0);
            format!(
                "agentloop: {}; waiting until {} ({left}s), the task's retries untouched",
                s.limit_message.as_deref().unwrap_or("usage limit"),
                humantime::format_rfc3339_seconds(until)
            )
        }
        WaitReason::Gate(g) => {
            let mut t = format!(
                "agentloop: waiting for a person: {}\n  `agentloop approve [--note …]` or `agentloop reject --note …` (run {})",
                g.describe(),
                s.run_id
            );
            for line in crate::describe::held(s, g) {
                t.push_str(&format!("\n  {line}"));
            }
            t
        }
        WaitReason::Blocked { tasks, .. } => {
            let mut t = format!(
                "agentloop: blocked: no task can go on until a person looks at {}",
                tasks.join(", ")
            );
            for id in tasks {
                if let Some(why) = s.task(id).and_then(|t| t.blocked.clone()) {
                    t.push_str(&format!("\n  {id}: {}", why.lines().next().unwrap_or("")));
                }
            }
            t.push_str("\n  `agentloop retry TASK` (with `agentloop steer \"…\"`) or `agentloop skip TASK`");
            t
        }
        WaitReason::Workers => return None,
    };
    Some(text)
}
