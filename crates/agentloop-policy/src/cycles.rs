//! Cycles (`[run] cycle`): when one ends, the rule that judges it without an agent,
//! what a judging agent is told, and how its verdict is read.
//!
//! A cycle ends once its number of tasks is done, or its time has passed (the run's
//! time, as its journal records it), while tasks remain. The rule: go on while the
//! cycle got a task done; when a whole cycle got none, restart the workers fresh from
//! the integration branch, once; when the cycle after a restart got none either, stop.

use agentloop_config::Cycle;
use agentloop_journal::{CycleVerdict, RunState};

/// The cycle that has ended and waits for its verdict, if one has.
pub(super) fn due(s: &RunState) -> Option<u32> {
    let cycle = s.settings.cycle?;
    if s.tasks.iter().all(|t| t.status.is_settled()) {
        return None;
    }
    let ended = match cycle {
        Cycle::Tasks(n) => done_in_cycle(s) >= n,
        Cycle::Every(ms) => now_ms(s).saturating_sub(since_ms(s)) >= ms,
    };
    ended.then_some(s.cycles.judged + 1)
}

/// Tasks done since the current cycle began.
pub fn done_in_cycle(s: &RunState) -> u32 {
    (s.done_count() as u32).saturating_sub(s.cycles.done_at_start)
}

fn since_ms(s: &RunState) -> u64 {
    match s.cycles.since_ms {
        0 => ms_of(&s.created),
        ms => ms,
    }
}

/// The run's time: its last record's.
fn now_ms(s: &RunState) -> u64 {
    ms_of(&s.updated)
}

fn ms_of(rfc3339: &str) -> u64 {
    humantime::parse_rfc3339(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// The rule's verdict on the cycle that ended, and why.
pub fn rule(s: &RunState) -> (CycleVerdict, Vec<String>) {
    let done = done_in_cycle(s);
    if done > 0 {
        return (
            CycleVerdict::GoOn,
            vec![format!(
                "{} done in this cycle",
                agentloop_ground::words::plural(done as usize, "task", "tasks")
            )],
        );
    }
    let restarted = matches!(s.cycles.last, Some((CycleVerdict::Restart, _)));
    if restarted {
        (
            CycleVerdict::Stop,
            vec![
                "no task done in this cycle, nor in the one before it, which started fresh".into(),
            ],
        )
    } else {
        (
            CycleVerdict::Restart,
            vec![
                "no task done in this cycle: the workers start fresh from the integration branch"
                    .into(),
            ],
        )
    }
}

/// What a judging agent is told about cycle `cycle`.
pub fn prompt(s: &RunState, cycle: u32) -> String {
    let mut out = format!("# Judging cycle {cycle}: {}\n\n", s.plan.title);
    out.push_str(&format!(
        "You judge an agentloop run at the end of each of its cycles ({}). Workers do the plan's tasks, each verified by its checks. Decide whether the run goes on, stops, or restarts its workers fresh from the integration branch (the tasks not done start again from the work merged so far, their own work set aside: for a run that drifted or is stuck).\n\n",
        s.settings.cycle.map_or("".into(), |c| c.describe())
    ));
    out.push_str(&format!(
        "## This cycle\n\n- tasks done in it: {}\n- tasks done in all: {} of {}\n- iterations so far: {}\n- cost so far: {}\n",
        done_in_cycle(s),
        s.done_count(),
        s.tasks.len(),
        s.iterations,
        agentloop_ground::words::money(s.cost_usd)
    ));
    if let Some((v, why)) = &s.cycles.last {
        out.push_str(&format!(
            "- the last cycle's verdict: {} ({})\n",
            v.as_str(),
            why.join("; ")
        ));
    }
    out.push_str("\n## Tasks\n\n");
    for t in &s.tasks {
        out.push_str(&format!(
            "- {}: {} [{}, {} attempts]",
            t.id,
            t.title,
            t.status.as_str(),
            t.attempts
        ));
        let why = t.blocked.as_deref().or_else(|| {
            (!t.status.is_settled())
                .then_some(t.last_digest.as_deref())
                .flatten()
        });
        if let Some(why) = why {
            let first = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            out.push_str(&format!(" — {}", first.trim()));
        }
        out.push('\n');
    }
    out.push_str("\n## What to answer\n\nA line `JUDGE: GO ON`, `JUDGE: STOP` or `JUDGE: RESTART`, then one line per reason, each starting with `- `.\n");
    out
}

/// A judging agent's verdict and reasons from its answer; `None` when it gave no
/// verdict agentloop reads (the rule decides then).
pub fn parse(text: &str) -> Option<(CycleVerdict, Vec<String>)> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = lines.iter().rposition(|l| {
        l.trim_matches('*')
            .to_ascii_uppercase()
            .starts_with("JUDGE:")
    })?;
    let word = lines[at]
        .trim_matches('*')
        .split_once(':')
        .map(|(_, w)| w.trim().trim_matches('*').to_ascii_uppercase())?;
    let verdict = match word.as_str() {
        "GO ON" | "GO_ON" | "CONTINUE" => CycleVerdict::GoOn,
        "STOP" => CycleVerdict::Stop,
        "RESTART" => CycleVerdict::Restart,
        _ => return None,
    };
    let reasons: Vec<String> = lines[at + 1..]
        .iter()
        .filter_map(|l| l.strip_prefix("- "))
        .map(str::to_string)
        .collect();
    Some((verdict, reasons))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_judges_answer_is_read_from_its_last_verdict_line() {
        assert_eq!(
            parse("Looking.\nJUDGE: STOP\n- enough for today\n- the budget matters"),
            Some((
                CycleVerdict::Stop,
                vec!["enough for today".into(), "the budget matters".into()]
            ))
        );
        assert_eq!(
            parse("`JUDGE: STOP` would be wrong.\n**JUDGE: GO ON**\n"),
            Some((CycleVerdict::GoOn, vec![]))
        );
        assert_eq!(
            parse("JUDGE: restart\n- drift").map(|v| v.0),
            Some(CycleVerdict::Restart)
        );
        assert_eq!(parse("I think it is fine."), None);
        assert_eq!(parse("JUDGE: maybe"), None);
    }
}
