//! `Must-not:` tripwires: what the agent must not do, in a plan's front matter
//! (`mustNot:`, for every task) or under a task. Each line says one thing:
//!
//! - `touch GLOB[, GLOB…]`: change no file matching (`migrations/`, `*.sql`,
//!   `src/**/schema.rs`);
//! - `match REGEX`: add no line matching;
//! - `add dependency`: add no dependency to a manifest (Cargo.toml, package.json, …);
//! - `break COMMAND`: leave this command passing;
//! - `run TEXT`: never run a command containing TEXT (as its output and tool log show).

use regex::Regex;

#[derive(Debug, Clone)]
pub enum Tripwire {
    Touch(Vec<Glob>),
    Match(Regex),
    AddDependency,
    Break(String),
    Run(String),
}

/// A path pattern: `dir/` (everything under it), `*` within a path component, `**`
/// across them; a pattern without a `/` matches a file's name in any directory.
#[derive(Debug, Clone)]
pub struct Glob {
    pub text: String,
    re: Regex,
}

impl Glob {
    pub fn new(text: &str) -> Result<Glob, String> {
        let t = text.trim().trim_start_matches("./");
        if t.is_empty() {
            return Err("an empty path pattern".into());
        }
        let mut re = String::from(if t.contains('/') { "^" } else { "(^|/)" });
        let mut chars = t.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' if chars.peek() == Some(&'*') => {
                    chars.next();
                    // `**/` is any number of directories, none included.
                    if chars.peek() == Some(&'/') {
                        chars.next();
                        re.push_str("(.*/)?");
                    } else {
                        re.push_str(".*");
                    }
                }
                '*' => re.push_str("[^/]*"),
                '?' => re.push_str("[^/]"),
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        re.push_str(if t.ends_with('/') { "" } else { "(/|$)" });
        Ok(Glob {
            text: t.to_string(),
            re: Regex::new(&re).map_err(|e| e.to_string())?,
        })
    }

    pub fn matches(&self, path: &str) -> bool {
        self.re.is_match(path)
    }
}

impl Tripwire {
    /// Reads one `Must-not:` line.
    pub fn parse(text: &str) -> Result<Tripwire, String> {
        let text = text.trim();
        let (verb, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        let needs = |what: &str| format!("`{verb}` needs {what}");
        match verb.to_ascii_lowercase().as_str() {
            "touch" => {
                let globs: Vec<Glob> = rest
                    .split(',')
                    .filter(|g| !g.trim().is_empty())
                    .map(Glob::new)
                    .collect::<Result<_, _>>()?;
                if globs.is_empty() {
                    return Err(needs("path patterns, e.g. `touch migrations/, *.sql`"));
                }
                Ok(Tripwire::Touch(globs))
            }
            "match" => {
                if rest.is_empty() {
                    return Err(needs("a regular expression"));
                }
                let re = rest
                    .strip_prefix('/')
                    .and_then(|r| r.strip_suffix('/'))
                    .unwrap_or(rest);
                Regex::new(re)
                    .map(Tripwire::Match)
                    .map_err(|e| format!("`match {rest}`: {e}"))
            }
            "add" => match rest.to_ascii_lowercase().as_str() {
                "dependency" | "dependencies" | "a dependency" | "new dependencies" => {
                    Ok(Tripwire::AddDependency)
                }
                _ => Err(format!(
                    "`add {rest}`: only `add dependency` is known; for lines use `match REGEX`"
                )),
            },
            "break" if !rest.is_empty() => Ok(Tripwire::Break(rest.to_string())),
            "break" => Err(needs("a command that must keep passing")),
            "run" if !rest.is_empty() => Ok(Tripwire::Run(rest.to_string())),
            "run" => Err(needs("the command the agent must never run")),
            _ => Err(format!(
                "`{text}` is not a tripwire; start it with touch, match, add dependency, break or run"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_people_write_them() {
        let g = |p: &str| Glob::new(p).unwrap();
        assert!(g("migrations/").matches("migrations/001.sql"));
        assert!(!g("migrations/").matches("src/migrations.rs"));
        assert!(g("*.sql").matches("db/x/001.sql"));
        assert!(!g("*.sql").matches("db/x.sqlite"));
        assert!(g("src/**/schema.rs").matches("src/schema.rs"));
        assert!(g("src/**/schema.rs").matches("src/a/b/schema.rs"));
        assert!(g("Cargo.lock").matches("Cargo.lock"));
        assert!(g("src/db").matches("src/db/mod.rs"));
        assert!(!g("src/db").matches("src/dbx.rs"));
    }

    #[test]
    fn each_kind_reads_and_nonsense_is_refused() {
        assert!(matches!(Tripwire::parse("touch a/, b/"), Ok(Tripwire::Touch(g)) if g.len() == 2));
        assert!(matches!(
            Tripwire::parse("match /unsafe\\s*\\{/"),
            Ok(Tripwire::Match(_))
        ));
        assert!(matches!(
            Tripwire::parse("add dependency"),
            Ok(Tripwire::AddDependency)
        ));
        assert!(
            matches!(Tripwire::parse("break cargo test"), Ok(Tripwire::Break(c)) if c == "cargo test")
        );
        assert!(
            matches!(Tripwire::parse("run git push --force"), Ok(Tripwire::Run(c)) if c == "git push --force")
        );
        assert!(Tripwire::parse("match (").unwrap_err().contains("match ("));
        assert!(Tripwire::parse("touch").is_err());
        assert!(Tripwire::parse("delete everything").is_err());
        assert!(Tripwire::parse("add a friend").is_err());
    }
}
