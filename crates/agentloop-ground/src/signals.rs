//! Signals in the agent's final message, parsed as whole markers.
//!
//! A marker counts when it stands on a line of its own, or as the last token of the
//! message after the end of a sentence ("Done. TASK_COMPLETE"). A marker inside prose
//! ("I will not say TASK_COMPLETE yet") or inside a code fence is not a signal.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Signals {
    /// The agent claims the task is complete (a claim, never proof).
    #[serde(default)]
    pub complete: bool,
    /// Which marker made the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// The proposed task list that followed `REPLAN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learnings: Vec<String>,
    /// `RISK:` and `ALTERNATIVE:` lines, each as `risk: …` / `alternative: …`, for the
    /// run's summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reported: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub action_result: BTreeMap<String, String>,
    /// A `NEXT_ACTION_NEEDED` value agentloop does not act on: the agent is told so in
    /// its next prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_next: Option<String>,
}

/// The `NEXT_ACTION_NEEDED` values agentloop acts on, and what each does.
pub const NEXT_ACTIONS: &str = "COMPLETED or VALIDATE (the work is ready: agentloop verifies it), DEVELOP (go on with the task), DEBUG (the next iteration looks for the cause of the failure), WAITING_INPUT (wait for a person's answer), PAUSED (wait for a person)";

impl Signals {
    /// The agent asked for a DEBUG iteration next (`NEXT_ACTION_NEEDED: DEBUG`).
    pub fn wants_debug(&self) -> bool {
        self.action_result
            .get("NEXT_ACTION_NEEDED")
            .is_some_and(|v| {
                v.trim_matches(['`', '*', ' '])
                    .eq_ignore_ascii_case("DEBUG")
            })
    }
}

const COMPLETE: &str = "TASK_COMPLETE";

/// A list item's text (`- x`, `* x`), or the line as it is.
fn unbullet(line: &str) -> &str {
    line.strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .map(str::trim_start)
        .unwrap_or(line)
}

/// Parses the final message. `promise` is the text that `<promise>…</promise>` must hold
/// to count as completion.
pub fn parse(message: &str, promise: &str) -> Signals {
    let mut s = Signals::default();
    let lines: Vec<&str> = message.lines().collect();
    let mut in_fence = false;
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        i += 1;
        if raw.trim().starts_with("```") || raw.trim().starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        let line = strip_emphasis(raw.trim());
        if in_fence {
            continue;
        }
        if line == COMPLETE {
            s.complete = true;
            s.marker.get_or_insert_with(|| COMPLETE.to_string());
        } else if let Some(p) = whole_promise(line) {
            record_promise(&mut s, p, promise);
        } else if let Some(q) = line.strip_prefix("BLOCKED:") {
            let q = q.trim();
            if !q.is_empty() {
                s.blocked = Some(q.to_string());
            }
        } else if let Some(l) = line.strip_prefix("LEARNING:") {
            let l = l.trim();
            if !l.is_empty() {
                s.learnings.push(l.to_string());
            }
        } else if let Some((what, l)) =
            line.strip_prefix("RISK:").map(|l| ("risk", l)).or_else(|| {
                line.strip_prefix("ALTERNATIVE:")
                    .map(|l| ("alternative", l))
            })
        {
            let l = l.trim();
            if !l.is_empty() {
                s.reported.push(format!("{what}: {l}"));
            }
        } else if line == "REPLAN" || line == "REPLAN:" {
            let rest: Vec<&str> = lines[i..].to_vec();
            let proposal = rest.join("\n").trim().to_string();
            if !proposal.is_empty() {
                s.replan = Some(proposal);
            }
            break;
        } else if line == "---LOOP_STATUS---" || line == "---RALPH_STATUS---" {
            let end = if line == "---LOOP_STATUS---" {
                "---END_STATUS---"
            } else {
                "---END_RALPH_STATUS---"
            };
            let mut fields = BTreeMap::new();
            let mut closed = false;
            while i < lines.len() {
                let l = lines[i].trim();
                i += 1;
                if l == end || l == "---END_STATUS---" {
                    closed = true;
                    break;
                }
                if let Some((k, v)) = l.split_once(':') {
                    fields.insert(k.trim().to_ascii_uppercase(), v.trim().to_string());
                }
            }
            if closed {
                if fields
                    .get("EXIT_SIGNAL")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                {
                    s.complete = true;
                    s.marker.get_or_insert_with(|| "EXIT_SIGNAL".to_string());
                }
                s.status = fields;
            }
        } else if line == "ACTION_RESULT:" || line.starts_with("ACTION_RESULT:") {
            let mut fields = BTreeMap::new();
            let first = line["ACTION_RESULT:".len()..].trim();
            if !first.is_empty() {
                fields.insert("RESULT".to_string(), first.to_string());
            }
            while i < lines.len() {
                // `key: value`, or bulleted: `- key: value`.
                let l = unbullet(lines[i].trim());
                let Some((k, v)) = l
                    .split_once(':')
                    .filter(|(k, _)| !k.is_empty() && !k.contains(' '))
                else {
                    break;
                };
                fields.insert(k.trim().to_ascii_uppercase(), v.trim().to_string());
                i += 1;
            }
            s.action_result.extend(fields);
        } else if let Some(v) = unbullet(line).strip_prefix("NEXT_ACTION_NEEDED:") {
            s.action_result
                .insert("NEXT_ACTION_NEEDED".into(), v.trim().to_string());
        }
    }
    // The executor role's next action is acted on: COMPLETED claims completion (still
    // verified), WAITING_INPUT and PAUSED wait for a person.
    let next = s
        .action_result
        .get("NEXT_ACTION_NEEDED")
        .map(|v| v.trim_matches(['`', '*', ' ']).to_ascii_uppercase());
    // What a person reads: the message fields first; a status only when it is words, not
    // a code (`needs_input`, `blocked`).
    let said = |keys: &[&str]| {
        keys.iter().find_map(|k| {
            s.action_result
                .get(*k)
                .filter(|v| !v.is_empty())
                .filter(|v| *k != "STATUS" || v.trim().contains(' '))
                .cloned()
        })
    };
    match next.as_deref() {
        Some("COMPLETED") if s.blocked.is_none() => {
            s.complete = true;
            s.marker
                .get_or_insert_with(|| "NEXT_ACTION_NEEDED: COMPLETED".to_string());
        }
        Some("WAITING_INPUT") if s.blocked.is_none() => {
            s.blocked = Some(
                said(&["QUESTION", "WAITING_FOR", "MESSAGE", "REASON", "STATUS"])
                    .unwrap_or_else(|| "the agent waits for input".into()),
            );
        }
        Some("PAUSED") if s.blocked.is_none() => {
            s.blocked = Some(match said(&["REASON", "MESSAGE", "STATUS"]) {
                Some(r) => format!("the agent paused: {r}"),
                None => "the agent paused".into(),
            });
        }
        // VALIDATE: the work is ready to be checked — a claim, verified as any other.
        Some("VALIDATE") if s.blocked.is_none() => {
            s.complete = true;
            s.marker
                .get_or_insert_with(|| "NEXT_ACTION_NEEDED: VALIDATE".to_string());
        }
        // DEVELOP: go on with the task (what an iteration without a claim does);
        // DEBUG: the folded state gives the task a DEBUG iteration next.
        Some("DEVELOP" | "DEBUG" | "COMPLETED" | "WAITING_INPUT" | "PAUSED") | None => {}
        Some(other) => s.unknown_next = Some(other.to_string()),
    }
    // A trailing marker after the end of a sentence: "Done. TASK_COMPLETE".
    if !s.complete {
        let last_line = message.trim_end().lines().last().unwrap_or_default().trim();
        if let Some(before) = last_line.strip_suffix(COMPLETE).map(str::trim_end)
            && ends_sentence(before)
        {
            s.complete = true;
            s.marker = Some(COMPLETE.to_string());
        } else if let Some(start) = last_line.rfind("<promise>")
            && ends_sentence(last_line[..start].trim_end())
            && let Some(p) = whole_promise(&last_line[start..])
        {
            record_promise(&mut s, p, promise);
        }
    }
    s
}

fn record_promise(s: &mut Signals, text: &str, promise: &str) {
    s.promise = Some(text.to_string());
    if text == promise {
        s.complete = true;
        s.marker
            .get_or_insert_with(|| format!("<promise>{text}</promise>"));
    }
}

/// `<promise>X</promise>` spanning the whole (trimmed) text.
fn whole_promise(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("<promise>")?.strip_suffix("</promise>")?;
    (!inner.contains("<promise>")).then(|| inner.trim())
}

/// True when `before` is empty or ends a sentence, so what follows is not part of it.
fn ends_sentence(before: &str) -> bool {
    before.is_empty() || before.ends_with(['.', '!', ':', ')', ']', '—'])
}

fn strip_emphasis(line: &str) -> &str {
    let mut l = line;
    for mark in ["**", "__", "`"] {
        if let Some(inner) = l.strip_prefix(mark).and_then(|x| x.strip_suffix(mark)) {
            l = inner.trim();
        }
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(msg: &str) -> bool {
        parse(msg, "COMPLETE").complete
    }

    #[test]
    fn whole_markers_count() {
        assert!(complete("All tests pass.\nTASK_COMPLETE"));
        assert!(complete("Done. TASK_COMPLETE"));
        assert!(complete("Done!\n\n**TASK_COMPLETE**\n"));
        assert!(complete("<promise>COMPLETE</promise>"));
        assert!(complete("Finished. <promise>COMPLETE</promise>"));
        assert!(complete(
            "---LOOP_STATUS---\nSTATUS: COMPLETE\nEXIT_SIGNAL: true\nCRITERIA: 3/3\n---END_STATUS---"
        ));
        assert!(complete(
            "---RALPH_STATUS---\nEXIT_SIGNAL: true\n---END_RALPH_STATUS---"
        ));
    }

    #[test]
    fn prose_mentions_do_not_count() {
        assert!(!complete("I will not say TASK_COMPLETE yet"));
        assert!(!complete(
            "I will not say TASK_COMPLETE yet, the test fails."
        ));
        assert!(!complete("When it passes I'll print TASK_COMPLETE"));
        assert!(!complete(
            "The marker is `TASK_COMPLETE` once the tests pass, not now."
        ));
        assert!(!complete("```\nTASK_COMPLETE\n```\nNot done."));
        assert!(!complete(
            "I'll output <promise>COMPLETE</promise> when it is true"
        ));
        assert!(!complete("<promise>ALMOST</promise>"));
        assert!(!complete("TASK_COMPLETED"));
        assert!(!complete(
            "---LOOP_STATUS---\nEXIT_SIGNAL: false\n---END_STATUS---"
        ));
        assert!(!complete(
            "---LOOP_STATUS---\nEXIT_SIGNAL: true\n(never closed)"
        ));
    }

    #[test]
    fn blocked_learning_and_replan() {
        let s = parse(
            "LEARNING: the tests need TZ=UTC\nBLOCKED: Which database should I use?\nREPLAN\n## T2a: Part one\nVerify: true\n",
            "COMPLETE",
        );
        assert_eq!(s.learnings, vec!["the tests need TZ=UTC"]);
        assert_eq!(s.blocked.as_deref(), Some("Which database should I use?"));
        assert_eq!(s.replan.as_deref(), Some("## T2a: Part one\nVerify: true"));
        assert!(!s.complete);
    }

    #[test]
    fn the_executors_bulleted_result_and_next_action_are_acted_on() {
        let s = parse(
            "Done.\n\nACTION_RESULT:\n- action: DEVELOP\n- status: success\n- files_changed: src/a.rs\n\nNEXT_ACTION_NEEDED: COMPLETED\n",
            "DONE",
        );
        assert_eq!(
            s.action_result.get("ACTION").map(String::as_str),
            Some("DEVELOP")
        );
        assert_eq!(
            s.action_result.get("FILES_CHANGED").map(String::as_str),
            Some("src/a.rs")
        );
        assert!(s.complete);
        let s = parse(
            "ACTION_RESULT:\n- action: DEVELOP\n- question: which port?\n- NEXT_ACTION_NEEDED: WAITING_INPUT\n",
            "DONE",
        );
        assert_eq!(s.blocked.as_deref(), Some("which port?"));
        assert!(!s.complete);
        let s = parse(
            "ACTION_RESULT:\n- status: rate limited by the API\nNEXT_ACTION_NEEDED: PAUSED\n",
            "DONE",
        );
        assert_eq!(
            s.blocked.as_deref(),
            Some("the agent paused: rate limited by the API")
        );
        // A status code is not what a person needs; the message is.
        let s = parse(
            "ACTION_RESULT:\n- status: needs_input\n- message: need a choice\nNEXT_ACTION_NEEDED: WAITING_INPUT\n",
            "DONE",
        );
        assert_eq!(s.blocked.as_deref(), Some("need a choice"));
        let s = parse(
            "ACTION_RESULT:\n- status: needs_input\nNEXT_ACTION_NEEDED: WAITING_INPUT\n",
            "DONE",
        );
        assert_eq!(s.blocked.as_deref(), Some("the agent waits for input"));
        // Every value has an effect, or is named as one agentloop does not act on.
        let s = parse(
            "ACTION_RESULT:\n- status: ready\nNEXT_ACTION_NEEDED: VALIDATE\n",
            "DONE",
        );
        assert!(s.complete);
        let s = parse("NEXT_ACTION_NEEDED: DEBUG\n", "DONE");
        assert!(s.wants_debug() && !s.complete && s.unknown_next.is_none());
        let s = parse("NEXT_ACTION_NEEDED: DEVELOP\n", "DONE");
        assert!(!s.complete && s.unknown_next.is_none() && s.blocked.is_none());
        let s = parse("NEXT_ACTION_NEEDED: DEPLOY\n", "DONE");
        assert_eq!(s.unknown_next.as_deref(), Some("DEPLOY"));
        assert!(!s.complete);
    }

    #[test]
    fn action_result_block() {
        let s = parse(
            "ACTION_RESULT:\nstatus: success\nfiles: 2\n\nbye",
            "COMPLETE",
        );
        assert_eq!(
            s.action_result.get("STATUS").map(String::as_str),
            Some("success")
        );
        assert_eq!(s.action_result.len(), 2);
    }
}
