//! Aider: `aider --message-file PROMPT --yes-always --no-auto-commits`. Plain text: a
//! banner, the model's reply, `Tokens: 2.1k sent, 150 received. Cost: $0.01 message,
//! $0.05 session.`, then what it did with the reply (`Applied edit to hello.txt`).
//! It exits 0 on API errors too, wrapping their text at 80 columns: the text, the
//! working tree and verification judge it. It keeps `.aider*` files in the tree.

use agentloop_config::AgentConfig;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify};

/// `aider --message-file PROMPT`, never committing itself nor touching `.gitignore`.
pub const CLI: CliKind = CliKind {
    kind: "aider",
    install: "pip install aider-chat",
    prompt: PromptIn::File,
    argv,
    env: &[],
    setup: crate::cli::no_setup,
    own_files: &[".aider*"],
    parse: parse_text,
    files: crate::cli::no_files,
    finish: keep,
    auth_hint: None,
};

/// The command line, without a shell: the prompt from the iteration's `prompt.md`,
/// its chat and input history beside it rather than in the work tree.
pub fn argv(c: &AgentConfig, inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("aider", c);
    let beside = |name: &str| {
        inv.prompt_file
            .with_file_name(name)
            .to_string_lossy()
            .into_owned()
    };
    argv.extend([
        "--message-file".into(),
        inv.prompt_file.to_string_lossy().into_owned(),
        "--chat-history-file".into(),
        beside("aider.chat.history.md"),
        "--input-history-file".into(),
        beside("aider.input.history"),
    ]);
    argv.extend(
        [
            "--yes-always",
            "--no-auto-commits",
            "--no-gitignore",
            "--no-pretty",
            "--no-stream",
            "--no-check-update",
            "--no-analytics",
            "--no-show-model-warnings",
        ]
        .map(String::from),
    );
    if let Some(m) = &c.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// `2.1k` → 2100, `1.2M` → 1200000, `150` → 150.
fn count(word: &str) -> u64 {
    let w = word.trim().trim_end_matches(',');
    let (num, mult) = match w.chars().last() {
        Some('k') | Some('K') => (&w[..w.len() - 1], 1_000.0),
        Some('m') | Some('M') => (&w[..w.len() - 1], 1_000_000.0),
        _ => (w, 1.0),
    };
    (num.replace(',', "").parse::<f64>().unwrap_or(0.0) * mult).round() as u64
}

/// Lines of the banner Aider prints before the reply.
const BANNER: &[&str] = &[
    "Aider v",
    "Model:",
    "Main model:",
    "Weak model:",
    "Editor model:",
    "Git repo:",
    "Repo-map:",
    "Added ",
    "https://aider.chat/HISTORY.html",
];

/// Reads the `Tokens:` line into `p`; returns whether it named a cost.
fn read_tokens(rest: &str, p: &mut Parsed, cost: &mut f64) -> bool {
    // " 2.1k sent, 1.5k cache hit, 150 received. Cost: $0.01 message, $0.05 session."
    let (tokens, money) = rest.split_once("Cost:").unwrap_or((rest, ""));
    for part in tokens.trim().trim_end_matches('.').split(',') {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(n) = words.first().map(|w| count(w)) else {
            continue;
        };
        match words.get(1..).map(|w| w.join(" ")).as_deref() {
            Some("sent") => p.usage.input_tokens += n,
            Some("received") => p.usage.output_tokens += n,
            Some("cache hit") => p.usage.cached_input_tokens += n,
            Some("cache write") => p.usage.cache_write_tokens += n,
            _ => {}
        }
    }
    match money.split_whitespace().next() {
        Some(m) => {
            *cost += m
                .trim_start_matches('$')
                .trim_end_matches(',')
                .parse::<f64>()
                .unwrap_or(0.0);
            true
        }
        None => false,
    }
}

/// An error Aider printed (`litellm.RateLimitError: …`), its 80-column wrap undone:
/// the lines up to the next blank one.
fn error_at(lines: &[&str], i: usize) -> Option<String> {
    let first = lines[i].trim();
    let is_error = first.starts_with("litellm.")
        || first.contains("RateLimitError")
        || first.contains("AuthenticationError")
        || first.contains("APIConnectionError");
    if !is_error {
        return None;
    }
    let mut text = first.to_string();
    for l in &lines[i + 1..] {
        if l.trim().is_empty() {
            break;
        }
        text.push(' ');
        text.push_str(l.trim());
    }
    Some(text)
}

pub fn parse_text(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut cost = 0.0;
    let mut saw_cost = false;
    let mut replies = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.trim().strip_prefix("Tokens:") {
            saw_cost |= read_tokens(rest, &mut p, &mut cost);
            replies.push(i);
        }
    }
    // The reply is what comes before the last `Tokens:` line, after the one before
    // it or after the banner; what follows the last one is Aider's own account of
    // the edits it applied.
    let end = replies.last().copied().unwrap_or(lines.len());
    let start = match replies.len() {
        n if n >= 2 => replies[n - 2] + 1,
        _ => lines[..end]
            .iter()
            .rposition(|l| BANNER.iter().any(|b| l.trim_start().starts_with(b)))
            .map_or(0, |i| i + 1),
    };
    p.final_message = lines[start..end].join("\n").trim().to_string();
    // An error counts when no reply came after it (one it retried past does not).
    p.error = (replies.last().map_or(0, |i| i + 1)..lines.len())
        .rev()
        .find_map(|i| error_at(&lines, i))
        .map(|e| classify(&e, None));
    // Aider's "sent" counts cached tokens too.
    p.usage.input_tokens = p
        .usage
        .input_tokens
        .saturating_sub(p.usage.cached_input_tokens);
    p.cost_usd = saw_cost.then_some(cost);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_ground::values::Usage;
    use agentloop_journal::AgentErrorKind;

    const REPLY: &str = "Aider v0.86.1\nMain model: openai/mock with whole edit format\n\nI added the function.\n\nsrc/greet.py\nApplied edit to src/greet.py\nTokens: 2.1k sent, 1.5k cache hit, 150 received. Cost: $0.01 message, $0.05 session.\n\nTASK_COMPLETE\nTokens: 900 sent, 12 received. Cost: $0.0023 message, $0.0523 session.\n";

    #[test]
    fn tokens_and_cost_from_the_text() {
        let p = parse_text(REPLY);
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 1500,
                cached_input_tokens: 1500,
                cache_write_tokens: 0,
                output_tokens: 162
            }
        );
        assert!((p.cost_usd.unwrap() - 0.0123).abs() < 1e-12);
        assert!(p.final_message.ends_with("TASK_COMPLETE"));
        assert!(!p.final_message.contains("Tokens:"));
    }

    #[test]
    fn the_reply_of_the_real_aider_is_the_final_message() {
        let p = parse_text(include_str!(
            "../fixtures/aider-0.86.2/whole-edit-success.txt"
        ));
        assert!(p.final_message.starts_with("I will create the file."));
        assert!(
            p.final_message.ends_with("All done. TASK_COMPLETE"),
            "{}",
            p.final_message
        );
        assert!(!p.final_message.contains("Applied edit"));
        assert_eq!(p.usage.input_tokens, 1200);
        assert_eq!(p.usage.output_tokens, 50);
        assert_eq!(p.cost_usd, None, "no price known: the table decides");
        assert!(p.error.is_none());
    }

    #[test]
    fn wrapped_errors_of_the_real_aider_are_read_whole() {
        let p = parse_text(include_str!("../fixtures/aider-0.86.2/auth-error-401.txt"));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert!(
            e.message
                .contains("Incorrect API key provided: k. You can find your API key at"),
            "{}",
            e.message
        );
        let p = parse_text(include_str!(
            "../fixtures/aider-0.86.2/rate-limited-retrying.txt"
        ));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        assert!(
            e.message
                .contains("Rate limit reached for requests. Please try again in 20s."),
            "{}",
            e.message
        );
    }

    #[test]
    fn litellm_errors_are_classified() {
        let p = parse_text(
            "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached\n",
        );
        assert_eq!(p.error.unwrap().kind, AgentErrorKind::RateLimit);
        let p = parse_text(
            "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided\n",
        );
        assert_eq!(p.error.unwrap().kind, AgentErrorKind::Auth);
    }
}
