//! `agentloop watch [RUN]`: a terminal view of a run — tasks, budgets, the current
//! iteration's live output, what waits for you — with keys for pause, resume, stop and
//! approve. Every key is the same journal request as the CLI's.

use std::time::Duration;

use agentloop_journal::{Request, RunStatus};
use agentloop_journal::{RunState, TaskStatus};
use agentloop_workspace::{RunDir, Workspace};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, List, ListItem, Paragraph, Wrap};

use crate::error::{CliError, ExitKind};
use crate::render::money;

/// What one frame shows besides the state: the live output and the last message.
pub struct View<'a> {
    pub state: &'a RunState,
    pub live: &'a str,
    pub message: &'a str,
}

fn ratio(used: f64, limit: f64) -> f64 {
    if limit <= 0.0 {
        0.0
    } else {
        (used / limit).clamp(0.0, 1.0)
    }
}

/// Draws one frame (pure: tested with ratatui's TestBackend).
pub fn draw(f: &mut Frame, v: &View) {
    let s = v.state;
    let [head, gauges, body, foot] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(3),
        Constraint::Min(6),
        Constraint::Length(2),
    ])
    .areas(f.area());
    let title = format!(
        " {} · run {} · {} ",
        s.plan.title,
        s.run_id,
        s.status.as_str()
    );
    let done = s.done_count();
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title(title))
            .gauge_style(Style::default().fg(if s.status == RunStatus::Completed {
                Color::Green
            } else {
                Color::Cyan
            }))
            .ratio(ratio(done as f64, s.tasks.len() as f64))
            .label(format!("{done}/{} tasks", s.tasks.len())),
        head,
    );
    let b = &s.settings.budgets;
    let [g1, g2, g3] = Layout::horizontal([Constraint::Ratio(1, 3); 3]).areas(gauges);
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title(" iterations "))
            .ratio(ratio(
                s.counted_iterations() as f64,
                b.max_iterations as f64,
            ))
            .label(format!("{}/{}", s.counted_iterations(), b.max_iterations)),
        g1,
    );
    let cost_label = match b.max_cost_usd {
        Some(m) => format!("{}/{}", money(s.cost_usd), money(m)),
        None => money(s.cost_usd),
    };
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title(" cost "))
            .ratio(b.max_cost_usd.map(|m| ratio(s.cost_usd, m)).unwrap_or(0.0))
            .label(cost_label),
        g2,
    );
    let tokens = s.usage.total();
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title(" tokens "))
            .ratio(
                b.max_tokens
                    .map(|m| ratio(tokens as f64, m as f64))
                    .unwrap_or(0.0),
            )
            .label(match b.max_tokens {
                Some(m) => format!("{tokens}/{m}"),
                None => tokens.to_string(),
            }),
        g3,
    );
    let [tasks, live] =
        Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
    let items: Vec<ListItem> = s
        .tasks
        .iter()
        .map(|t| {
            let (mark, color) = match t.status {
                TaskStatus::Done => ("✓", Color::Green),
                TaskStatus::Running => ("▶", Color::Cyan),
                TaskStatus::Blocked => ("!", Color::Red),
                TaskStatus::Skipped => ("-", Color::DarkGray),
                TaskStatus::Pending => (" ", Color::Reset),
            };
            ListItem::new(Line::from(vec![
                Span::styled(format!("{mark} "), Style::default().fg(color)),
                Span::styled(
                    format!("{:<6}", t.id),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!(" {} ({} it)", t.title, t.iterations)),
                // What the independent reviewer said last.
                Span::styled(
                    t.reviews
                        .last()
                        .map(|r| format!(" · {r}"))
                        .unwrap_or_default(),
                    Style::default().fg(
                        if t.review_rejections > 0 && t.status != TaskStatus::Done {
                            Color::Yellow
                        } else {
                            Color::DarkGray
                        },
                    ),
                ),
            ]))
        })
        .collect();
    f.render_widget(
        List::new(items).block(Block::default().borders(Borders::ALL).title(tasks_title(s))),
        tasks,
    );
    let live_title = match s.current() {
        _ if s.settings.in_worktrees() => format!(" {} workers ", s.settings.workers),
        Some(o) => format!(
            " iteration {} · task {} · {} ",
            o.started.iteration,
            o.started.task,
            o.started.kind.as_str()
        ),
        None => " agent output ".to_string(),
    };
    // At the surface gate the pane shows what a person decides on: the diffs.
    let gate_diff: Option<String> = s.surface_gate_changes().map(|cs| {
        cs.iter()
            .map(|c| format!("{}\n{}", c.describe(), c.diff))
            .collect::<Vec<_>>()
            .join("\n\n")
    });
    let live_text = gate_diff.as_deref().unwrap_or(v.live);
    let lines: Vec<&str> = live_text.lines().collect();
    let tail = lines[lines
        .len()
        .saturating_sub(live.height.saturating_sub(2) as usize)..]
        .join("\n");
    f.render_widget(
        Paragraph::new(tail)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(live_title)),
        live,
    );
    let needs = if let Some(g) = &s.gate {
        format!("needs you: {} — a approve", g.describe())
    } else if let Some(t) = s.tasks.iter().find(|t| t.status == TaskStatus::Blocked) {
        format!(
            "needs you: task {} is blocked: {}",
            t.id,
            t.blocked_headline().unwrap_or("")
        )
    } else if s.limit_until_ms.is_some() {
        "waiting for a usage limit to reset".to_string()
    } else {
        v.message.to_string()
    };
    let keys = "p pause · r resume · s stop · a approve · q or Ctrl-C quit";
    f.render_widget(
        Paragraph::new(vec![
            Line::from(Span::styled(needs, Style::default().fg(Color::Yellow))),
            Line::from(Span::styled(keys, Style::default().fg(Color::DarkGray))),
        ]),
        foot,
    );
}

/// The tasks pane's title; under `[sandbox]`, what it refused and the latest.
/// Under `[run] cycle`, the cycle the run is in and the last one's verdict.
fn tasks_title(s: &RunState) -> String {
    let cycle = match (s.settings.cycle, &s.cycles.last) {
        (None, _) => String::new(),
        (Some(_), None) => format!(" · cycle {}", s.cycles.judged + 1),
        (Some(_), Some((v, _))) => format!(
            " · cycle {} · last verdict: {}",
            s.cycles.judged + 1,
            v.as_str()
        ),
    };
    if !s.settings.sandbox.on() {
        return format!(" tasks{cycle} ");
    }
    match s.sandbox.recent.last() {
        Some((i, d)) => format!(
            " tasks{cycle} · sandbox refused {} · last, iteration {i}: {} ",
            s.sandbox.count,
            d.describe()
        ),
        None => format!(" tasks{cycle} · sandbox: nothing refused "),
    }
}

fn live_output(run: &RunDir, s: &RunState) -> String {
    if s.settings.in_worktrees() {
        return lanes(run, s);
    }
    let Some(o) = s.current() else {
        return String::new();
    };
    let bytes =
        std::fs::read(run.iteration_dir(o.started.iteration).join("agent.log")).unwrap_or_default();
    let start = bytes.len().saturating_sub(16 * 1024);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

pub fn watch(ws: &Workspace, run: Option<&str>) -> Result<ExitKind, CliError> {
    use agentloop_ground::tty;
    use ratatui::crossterm::event::{self, Event as Key, KeyCode, KeyModifiers};
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // With a shared store, a run driven on another machine is watched from its copy
    // here, kept up to date as the store notifies.
    super::store::copy_runs(ws)?;
    let run = ws.resolve(run)?;
    run.load()?;
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(CliError::user("agentloop watch needs a terminal")
            .hint("`agentloop status` or `agentloop log --follow` work in pipes and scripts"));
    }
    // SIGTERM or SIGINT from outside: leave the screen as it was found.
    let ended = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, ended.clone())?;
    }
    let mut terminal = ratatui::init();
    let mut message = String::from("watching; the run goes on without this window");
    let mut gone = false;
    let result = loop {
        let loaded = match run.load_cached() {
            Ok(l) => l,
            Err(e) => break Err(CliError::from(e)),
        };
        let live = live_output(&run, &loaded.state);
        if let Err(e) = terminal.draw(|f| {
            draw(
                f,
                &View {
                    state: &loaded.state,
                    live: &live,
                    message: &message,
                },
            )
        }) {
            // A terminal hung up under us fails the write: its end, not a fault.
            if ended.load(Ordering::SeqCst)
                || tty::wait_input(std::io::stdin().as_fd(), Duration::ZERO) == tty::Input::Gone
            {
                gone = true;
                break Ok(ExitKind::Interrupted);
            }
            break Err(CliError::internal(e.to_string()));
        }
        if ended.load(Ordering::SeqCst) {
            break Ok(ExitKind::Interrupted);
        }
        // Waited for here, not in crossterm: its wait spins on a terminal whose other
        // end closed (readable for ever, each read empty), and never comes back to
        // see a signal.
        match tty::wait_input(std::io::stdin().as_fd(), Duration::from_millis(250)) {
            tty::Input::Quiet => continue,
            tty::Input::Gone => {
                gone = true;
                break Ok(ExitKind::Interrupted);
            }
            tty::Input::Keys => {}
        }
        if !event::poll(Duration::ZERO).unwrap_or(false) {
            continue;
        }
        let Ok(Key::Key(k)) = event::read() else {
            continue;
        };
        let request = match k.code {
            KeyCode::Char('q') | KeyCode::Esc => break Ok(ExitKind::Completed),
            // The terminal is raw: Ctrl-C arrives as a key, and quits like `q`.
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                break Ok(ExitKind::Completed);
            }
            KeyCode::Char('p') => Request::Pause,
            KeyCode::Char('r') => Request::Resume,
            KeyCode::Char('s') => Request::Stop,
            KeyCode::Char('a') => Request::Approve {
                note: None,
                gate: None,
            },
            _ => continue,
        };
        message = match run
            .load()
            .and_then(|l| run.append_control(l, super::request_id("tui"), "tui", request))
        {
            Ok((rec, _)) => format!("recorded as event {}", rec.seq),
            Err(e) => format!("could not record: {e}"),
        };
    };
    // The terminal as it was found, by hand: ratatui's own restoring says what failed
    // with `eprintln!`, and on a terminal that is gone (hung up, its window shut) that
    // write fails too, which is a panic.
    let _ = terminal.show_cursor();
    std::mem::forget(terminal);
    if let Err(e) = ratatui::try_restore()
        && !gone
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "warning: the terminal was not restored: {e}"
        );
    }
    result
}

/// One frame as text, `width` × `height` (for snapshot tests of the view).
pub fn frame_text(state: &RunState, live: &str, message: &str, width: u16, height: u16) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))
        .expect("a test backend");
    t.draw(|f| {
        draw(
            f,
            &View {
                state,
                live,
                message,
            },
        )
    })
    .expect("drawing into memory");
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..height {
        let line: String = (0..width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A run with workers: a lane per iteration in progress (its phase and the last lines
/// of its agent's output), then the merge queue.
fn lanes(run: &RunDir, s: &RunState) -> String {
    let now = agentloop_ground::clock::now_ms();
    let mut out = String::new();
    let lanes = s.lanes();
    if lanes.len() > super::status::LANES_ONE_PER_LINE {
        // A line per phase; the agents' output is each iteration's `agentloop log`.
        for line in super::status::grouped_lanes(s, now) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    for l in lanes
        .into_iter()
        .filter(|_| s.running.len() <= super::status::LANES_ONE_PER_LINE)
    {
        out.push_str(&format!(
            "[{}] {} · {} · {} · {}s\n",
            l.iteration,
            l.task,
            l.phase.as_str(),
            s.task(&l.task)
                .map(|t| agentloop_policy::attempt_words(s, t))
                .unwrap_or_else(|| format!("attempt {}", l.attempt)),
            now.saturating_sub(l.started_ms) / 1000
        ));
        let log =
            std::fs::read(run.iteration_dir(l.iteration).join("agent.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&log[log.len().saturating_sub(4096)..]).into_owned();
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        for line in tail.into_iter().rev() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    let q = s.merge_queue();
    if !q.is_empty() {
        let mut list: Vec<String> = q
            .iter()
            .take(8)
            .map(|l| format!("{} ({})", l.task, l.phase.as_str()))
            .collect();
        if q.len() > 8 {
            list.push(format!("and {} more", q.len() - 8));
        }
        out.push_str(&format!("merge queue: {}\n", list.join(", ")));
    }
    if s.settings.planners > 0 {
        out.push_str(&super::status::planners_line(s));
        out.push('\n');
    }
    if let Some(line) = super::status::cycle_line(s) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(i) = &s.integration {
        out.push_str(&format!(
            "integration branch {} at {}{}\n",
            i.branch,
            &i.head[..i.head.len().min(10)],
            if i.landed { " (landed)" } else { "" }
        ));
    }
    out
}
