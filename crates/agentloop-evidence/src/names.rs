//! The tests a task names (`Tests:`): ids or globs, matched against the ids runners
//! report. A name matches an id whole, or the end of it from a boundary (`::`, `/`,
//! `.`): `test_div.py::test_div` names `tests/test_div.py::test_div`, `div_*` names
//! `ops::div_by_zero`. `*` is any run of characters (`::` included), `?` one; nothing
//! else is special (pytest's `test_p[1]` is itself). A name marked `(new)` is a test
//! the task adds: it need not exist at the baseline.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestName {
    pub pattern: String,
    /// A test the task adds (matched once it exists).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new: bool,
}

impl TestName {
    /// Reads one name: `tests/test_x.py::test_y`, `` `a, b` `` (quoted: may hold
    /// commas), `tests/test_z.py::* (new)`.
    pub fn parse(item: &str) -> Result<TestName, String> {
        let mut s = item.trim();
        let mut new = false;
        if let Some(rest) = s.strip_suffix("(new)") {
            s = rest.trim_end();
            new = true;
        }
        let s = s
            .strip_prefix('`')
            .and_then(|r| r.strip_suffix('`'))
            .unwrap_or(s)
            .trim();
        if s.is_empty() {
            return Err("an empty test name".into());
        }
        if s.chars().all(|c| c == '*' || c == '?') {
            return Err(format!(
                "`{s}` names every test: name the tests this task must make pass"
            ));
        }
        Ok(TestName {
            pattern: s.to_string(),
            new,
        })
    }

    /// Reads a `Tests:` line: names separated by commas (a comma inside backquotes is
    /// part of a name).
    pub fn parse_list(value: &str) -> Result<Vec<TestName>, String> {
        let mut out = Vec::new();
        let mut item = String::new();
        let mut quoted = false;
        for c in value.chars() {
            match c {
                '`' => {
                    quoted = !quoted;
                    item.push(c);
                }
                ',' if !quoted => {
                    out.push(TestName::parse(&item)?);
                    item.clear();
                }
                c => item.push(c),
            }
        }
        if quoted {
            return Err("a backquote is never closed".into());
        }
        if !item.trim().is_empty() || out.is_empty() {
            out.push(TestName::parse(&item)?);
        }
        Ok(out)
    }

    /// Whether this name names test `id`.
    pub fn matches(&self, id: &str) -> bool {
        matches_id(&self.pattern, id)
    }

    /// As written in a plan: `` `a, b` `` when it holds a comma, ` (new)` when new.
    pub fn to_plan(&self) -> String {
        let p = if self.pattern.contains(',') {
            format!("`{}`", self.pattern)
        } else {
            self.pattern.clone()
        };
        if self.new { format!("{p} (new)") } else { p }
    }
}

/// Whether `pattern` names `id`: whole, or from a boundary to its end.
pub fn matches_id(pattern: &str, id: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        // A plain name: the id itself, or its end from a boundary.
        return id == pattern
            || id.strip_suffix(pattern).is_some_and(|head| {
                head.ends_with('/') || head.ends_with('.') || head.ends_with("::")
            });
    }
    if glob(pattern.as_bytes(), id.as_bytes()) {
        return true;
    }
    let b = id.as_bytes();
    (1..b.len()).any(|i| {
        let boundary = b[i - 1] == b'/'
            || b[i - 1] == b'.'
            || (i >= 2 && b[i - 1] == b':' && b[i - 2] == b':');
        boundary && glob(pattern.as_bytes(), &b[i..])
    })
}

/// `*` and `?` against all of `text`.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// What the baseline says of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameCheck {
    /// It names tests the baseline collected: how many fail there, how many pass.
    Matched { failing: usize, passing: usize },
    /// It names no collected test, but a file it points into did not import at the
    /// baseline (its tests could not be collected).
    NotCollected { file: String },
    /// A test the task adds (`(new)`), not there yet.
    New,
    /// It names no test the baseline collected.
    Unmatched,
}

/// Each name against the ids the baseline collected (id → outcome).
pub fn check_names(
    names: &[TestName],
    collected: &std::collections::BTreeMap<&str, crate::report::Outcome>,
) -> Vec<NameCheck> {
    names
        .iter()
        .map(|n| {
            let hits: Vec<crate::report::Outcome> = collected
                .iter()
                .filter(|(id, _)| n.matches(id))
                .map(|(_, o)| *o)
                .collect();
            if !hits.is_empty() {
                let passing = hits
                    .iter()
                    .filter(|o| **o == crate::report::Outcome::Passed)
                    .count();
                return NameCheck::Matched {
                    failing: hits.len() - passing,
                    passing,
                };
            }
            // A module that failed to import is one errored entry named after its file.
            let broken = collected.iter().find(|(id, o)| {
                **o == crate::report::Outcome::Errored
                    && !id.contains("::")
                    && (n.pattern.starts_with(&format!("{id}::"))
                        || id.ends_with(n.pattern.split("::").next().unwrap_or("")))
            });
            match broken {
                Some((file, _)) => NameCheck::NotCollected {
                    file: file.to_string(),
                },
                None if n.new => NameCheck::New,
                None => NameCheck::Unmatched,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_ids_whole_or_from_a_boundary() {
        let id = "tests/test_div.py::test_div";
        for yes in [
            "tests/test_div.py::test_div",
            "test_div.py::test_div",
            "tests/test_div.py::*",
            "*::test_div",
            "test_div",
            "tests/*",
        ] {
            assert!(matches_id(yes, id), "{yes}");
        }
        for no in [
            "test_di",
            "est_div",
            "tests/test_mul.py::*",
            "test_div.py::test_div2",
        ] {
            assert!(!matches_id(no, id), "{no}");
        }
        assert!(matches_id("ops::div_*", "ops::div_by_zero"));
        assert!(matches_id("div_*", "ops::div_by_zero"));
        assert!(matches_id("TestDiv", "example.com/m/ops::TestDiv"));
        assert!(matches_id("test_p[1]", "tests/t.py::TestK::test_p[1]"));
        assert!(!matches_id("test_p[1]", "tests/t.py::TestK::test_p1"));
        assert!(matches_id("t/div.test.js::div *", "t/div.test.js::div bad"));
    }

    #[test]
    fn a_tests_line_reads_quoted_names_and_new_tests() {
        let names =
            TestName::parse_list("tests/a.py::t1, `t/x.test.js::adds 1, 2`, tests/b.py::* (new)")
                .unwrap();
        assert_eq!(names.len(), 3);
        assert_eq!(names[1].pattern, "t/x.test.js::adds 1, 2");
        assert!(names[2].new && !names[0].new);
        assert_eq!(names[1].to_plan(), "`t/x.test.js::adds 1, 2`");
        assert!(TestName::parse_list("a, , b").is_err());
        assert!(TestName::parse_list("*").is_err());
        assert!(TestName::parse_list("`a, b").is_err());
        assert!(TestName::parse_list("").is_err());
    }

    #[test]
    fn names_are_checked_against_what_the_baseline_collected() {
        use crate::report::Outcome::*;
        let collected: std::collections::BTreeMap<&str, crate::report::Outcome> = [
            ("tests/a.py::t1", Failed),
            ("tests/a.py::t2", Passed),
            ("tests/broken.py", Errored),
        ]
        .into_iter()
        .collect();
        let names = TestName::parse_list(
            "tests/a.py::*, a.py::t2, tests/broken.py::t, tests/c.py::x (new), nope",
        )
        .unwrap();
        assert_eq!(
            check_names(&names, &collected),
            [
                NameCheck::Matched {
                    failing: 1,
                    passing: 1
                },
                NameCheck::Matched {
                    failing: 0,
                    passing: 1
                },
                NameCheck::NotCollected {
                    file: "tests/broken.py".into()
                },
                NameCheck::New,
                NameCheck::Unmatched,
            ]
        );
    }
}
