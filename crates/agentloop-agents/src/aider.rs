//! Aider: `aider --message MSG --yes-always --no-auto-commits`. Plain text; each reply
//! ends with `Tokens: 2.1k sent, 150 received. Cost: $0.01 message, $0.05 session.`
//! It has no defined exit codes: the working tree and verification judge it.

use agentloop_core::config::AgentConfig;

use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify};

/// `aider --message PROMPT`, never committing itself.
pub const CLI: CliKind = CliKind {
    kind: "aider",
    install: "pip install aider-chat",
    prompt: PromptIn::Argv,
    argv,
    parse: parse_text,
    finish: keep,
};

/// The command line, without a shell.
pub fn argv(c: &AgentConfig, prompt: &str) -> Vec<String> {
    let mut argv = base_argv("aider", c);
    argv.extend(
        [
            "--message",
            prompt,
            "--yes-always",
            "--no-auto-commits",
            "--no-pretty",
            "--no-stream",
            "--no-check-update",
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

pub fn parse_text(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut body = Vec::new();
    let mut cost = 0.0;
    let mut saw = false;
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("Tokens:") {
            // "Tokens: 2.1k sent, 1.5k cache hit, 150 received. Cost: $0.01 message, $0.05 session."
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
            if let Some(m) = money.split_whitespace().next() {
                cost += m
                    .trim_start_matches('$')
                    .trim_end_matches(',')
                    .parse::<f64>()
                    .unwrap_or(0.0);
                saw = true;
            }
            continue;
        }
        if l.contains("RateLimitError")
            || l.contains("AuthenticationError")
            || l.starts_with("litellm.")
        {
            p.error = Some(classify(l, None));
        }
        body.push(line);
    }
    // Aider's "sent" counts cached tokens too.
    p.usage.input_tokens = p
        .usage
        .input_tokens
        .saturating_sub(p.usage.cached_input_tokens);
    p.final_message = body.join("\n").trim().to_string();
    p.cost_usd = saw.then_some(cost);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_core::journal::AgentErrorKind;
    use agentloop_core::values::Usage;

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
