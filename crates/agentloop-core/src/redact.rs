//! Keeping secrets out of everything agentloop writes to disk: the values of
//! environment variables whose names say they are secrets (API keys, tokens,
//! passwords) are replaced by `[REDACTED:NAME]` in logs, digests and messages.

use std::borrow::Cow;
use std::path::Path;

/// Shorter values are too likely to match ordinary text.
const MIN_SECRET_LEN: usize = 8;

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
