//! Keeping secrets out of everything agentloop writes to disk: the values of
//! environment variables whose names say they are secrets (API keys, tokens,
//! passwords) are replaced by `[REDACTED:NAME]` in logs, digests and messages.

use std::borrow::Cow;
use std::path::Path;

/// Shorter values are too likely to match ordinary text.
const MIN_SECRET_LEN: usize = 8;

/// Secrets known by their shape, whatever the environment holds: (name, pattern).
/// A match is replaced by `[REDACTED:name]`; for `name=value` pairs only the value.
const SHAPES: &[(&str, &str)] = &[
    ("aws-access-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("stripe-key", r"\b[rs]k_live_[0-9A-Za-z]{16,}"),
    (
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    ),
];

/// `password=…`, `secret: …`, `api_key=…`: the value goes, the name stays.
const ASSIGNED: &str = r#"(?i)\b(pass(?:word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)"#;

/// `text` with the secrets known by their shape redacted (see [`SHAPES`]): for what
/// people type (notes, steering), where a secret need not be in the environment.
pub fn by_shape(text: &str) -> Cow<'_, str> {
    static RULES: std::sync::OnceLock<Vec<(&'static str, regex::Regex)>> =
        std::sync::OnceLock::new();
    static PAIRS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let rules = RULES.get_or_init(|| {
        SHAPES
            .iter()
            .map(|(n, p)| (*n, regex::Regex::new(p).expect("a valid secret pattern")))
            .collect()
    });
    let pairs = PAIRS.get_or_init(|| regex::Regex::new(ASSIGNED).expect("a valid pattern"));
    let mut out = Cow::Borrowed(text);
    for (name, re) in rules {
        if re.is_match(&out) {
            out = Cow::Owned(
                re.replace_all(&out, format!("[REDACTED:{name}]"))
                    .into_owned(),
            );
        }
    }
    if pairs.is_match(&out) {
        out = Cow::Owned(
            pairs
                .replace_all(&out, |c: &regex::Captures| {
                    if c[3].starts_with("[REDACTED") {
                        c[0].to_string()
                    } else {
                        format!("{}{}[REDACTED:{}]", &c[1], &c[2], c[1].to_ascii_lowercase())
                    }
                })
                .into_owned(),
        );
    }
    out
}

#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (value, name), longest values first so overlapping secrets redact whole.
    secrets: Vec<(String, String)>,
}

/// A variable whose name has a part that says secret: `…_KEY`, `…TOKEN`, `SECRET…`,
/// `PASSWORD`, `CREDENTIALS`, `AUTH`, `AUTHORIZATION` (`ANTHROPIC_API_KEY`,
/// `GH_TOKEN`, `AWS_SECRET_ACCESS_KEY`); `GIT_AUTHOR_EMAIL` is not one.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
        matches!(part, "AUTH" | "AUTHORIZATION" | "COOKIE")
            || [
                "KEY",
                "TOKEN",
                "SECRET",
                "PASSWORD",
                "PASSWD",
                "CREDENTIAL",
                "CREDENTIALS",
            ]
            .iter()
            .any(|w| part.ends_with(w) || part.starts_with("SECRET"))
    })
}

impl Redactor {
    /// Secrets from this process's environment and the given extra variables.
    pub fn from_env<'a>(extra: impl IntoIterator<Item = (&'a String, &'a String)>) -> Redactor {
        let mut secrets: Vec<(String, String)> = std::env::vars()
            .chain(extra.into_iter().map(|(k, v)| (k.clone(), v.clone())))
            .filter(|(k, v)| is_secret_name(k) && v.len() >= MIN_SECRET_LEN)
            .map(|(k, v)| (v, k))
            .collect();
        secrets.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        secrets.dedup_by(|a, b| a.0 == b.0);
        Redactor { secrets }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for (value, name) in &self.secrets {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[REDACTED:{name}]")));
            }
        }
        out
    }

    /// Rewrites a file with its secrets redacted (atomically, only if it had any).
    /// A verification's log and the tests it read, one by one, beside it
    /// (`verify.tests.json`): the tests' own messages can print a secret too.
    pub fn scrub_check_log(&self, log: &Path) -> std::io::Result<()> {
        self.scrub_file(log)?;
        self.scrub_file(&log.with_extension("tests.json"))
    }

    pub fn scrub_file(&self, path: &Path) -> std::io::Result<()> {
        if self.secrets.is_empty() {
            return Ok(());
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8_lossy(&bytes);
        if let Cow::Owned(clean) = self.redact(&text) {
            crate::fsutil::write_atomic(path, clean.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_known_by_their_shape_in_what_people_type() {
        let typed = "use AKIAIOSFODNN7EXAMPLE with ghp_0123456789abcdefghijABCDEFGHIJ0123456789 \
            and password=hunter2hunter, api_key: 'abc123def', token=\"t0k3n-v4lue\"; \
            sk-ant-api03-abcdefghijklmnopqrstuvwxyz then";
        let clean = by_shape(typed);
        for gone in [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123",
            "hunter2",
            "abc123def",
            "t0k3n",
            "sk-ant-api03",
        ] {
            assert!(!clean.contains(gone), "{gone} in {clean}");
        }
        for kept in [
            "[REDACTED:aws-access-key-id]",
            "[REDACTED:github-token]",
            "password=[REDACTED:password]",
            "api_key: [REDACTED:api_key]",
            "[REDACTED:anthropic-key]",
            "use ",
            " then",
        ] {
            assert!(clean.contains(kept), "{kept} in {clean}");
        }
        // Ordinary words are left alone.
        let plain = "the password field must not be empty; keep the token budget low";
        assert_eq!(by_shape(plain), plain);
    }

    #[test]
    fn secrets_by_name_are_redacted() {
        let env = [
            ("OPENAI_API_KEY".to_string(), "sk-abcdefghijkl".to_string()),
            ("GREETING".to_string(), "hello world!".to_string()),
        ];
        let r = Redactor::from_env(env.iter().map(|(k, v)| (k, v)));
        assert_eq!(
            r.redact("key=sk-abcdefghijkl, hello world!"),
            "key=[REDACTED:OPENAI_API_KEY], hello world!"
        );
        assert!(
            is_secret_name("GITHUB_TOKEN")
                && is_secret_name("db_password")
                && !is_secret_name("PATH")
        );
        for secret in [
            "AWS_SECRET_ACCESS_KEY",
            "HTTP_AUTHORIZATION",
            "OPENAI_APIKEY",
            "GH_TOKEN",
            "NPM_AUTH",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in [
            "GIT_AUTHOR_EMAIL",
            "GIT_AUTHOR_NAME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
        ] {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }
}
