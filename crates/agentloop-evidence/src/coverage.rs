//! Coverage, as the project's own tool reports it, read for the VALIDATE phase's
//! `coverage.json`: coverage.py's JSON (`coverage json`, `pytest --cov-report=json`),
//! Istanbul's summary (`jest`/`nyc`/`c8` with the `json-summary` reporter), LCOV
//! (`cargo llvm-cov --lcov`, `c8 --reporter=lcov`, `genhtml`'s input) and Go's cover
//! profile (`go test -coverprofile`). Lines (statements for coverage.py and Go) covered
//! of those that count, in total and per file. Pure: the driver reads the file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Lines {
    pub covered: u64,
    pub total: u64,
}

impl Lines {
    /// Percent covered (100 when nothing counts).
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            (self.covered as f64 * 10_000.0 / self.total as f64).round() / 100.0
        }
    }

    fn add(&mut self, other: Lines) {
        self.covered += other.covered;
        self.total += other.total;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// `coverage.py`, `istanbul`, `lcov` or `go`.
    pub format: String,
    pub lines: Lines,
    pub files: BTreeMap<String, Lines>,
}

impl Coverage {
    /// The totals summed from each file's.
    fn of_files(format: &str, files: BTreeMap<String, Lines>) -> Coverage {
        let mut lines = Lines::default();
        for l in files.values() {
            lines.add(*l);
        }
        Coverage {
            format: format.into(),
            lines,
            files,
        }
    }

    /// `coverage.json` as agentloop writes it: the totals with their percent, then
    /// each file's.
    pub fn to_json(&self) -> serde_json::Value {
        let lines = |l: &Lines| serde_json::json!({"covered": l.covered, "total": l.total, "percent": l.percent()});
        serde_json::json!({
            "format": self.format,
            "lines": lines(&self.lines),
            "files": self.files.iter().map(|(p, l)| {
                let mut v = lines(l);
                v["path"] = serde_json::json!(p);
                v
            }).collect::<Vec<_>>(),
        })
    }
}

/// Reads a coverage report in any of the formats above, told apart by its content; one
/// that counts more lines covered than there are is refused.
pub fn parse(text: &str) -> Result<Coverage, String> {
    let c = parse_any(text)?;
    let odd = std::iter::once(("the totals", &c.lines))
        .chain(c.files.iter().map(|(p, l)| (p.as_str(), l)))
        .find(|(_, l)| l.covered > l.total);
    if let Some((what, l)) = odd {
        return Err(format!(
            "{what}: {} lines covered of {}: not a report to trust",
            l.covered, l.total
        ));
    }
    Ok(c)
}

fn parse_any(text: &str) -> Result<Coverage, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        if v.get("totals").is_some() {
            return coverage_py(&v);
        }
        if v.get("total").is_some() {
            return istanbul(&v);
        }
        return Err(
            "JSON, but neither coverage.py's (`totals`) nor Istanbul's summary (`total`)".into(),
        );
    }
    if trimmed.starts_with("mode:") {
        return go_profile(trimmed);
    }
    if trimmed.lines().any(|l| l.starts_with("SF:")) {
        return lcov(trimmed);
    }
    Err("not a coverage report agentloop reads (coverage.py JSON, Istanbul json-summary, LCOV, a Go cover profile)".into())
}

fn count(v: &serde_json::Value, key: &str) -> Result<u64, String> {
    v.get(key)
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| format!("no whole number `{key}`"))
}

fn coverage_py(v: &serde_json::Value) -> Result<Coverage, String> {
    let summary = |s: &serde_json::Value| -> Result<Lines, String> {
        Ok(Lines {
            covered: count(s, "covered_lines")?,
            total: count(s, "num_statements")?,
        })
    };
    let mut files = BTreeMap::new();
    if let Some(map) = v.get("files").and_then(serde_json::Value::as_object) {
        for (path, f) in map {
            let s = f
                .get("summary")
                .ok_or_else(|| format!("{path}: no summary"))?;
            files.insert(path.clone(), summary(s)?);
        }
    }
    Ok(Coverage {
        format: "coverage.py".into(),
        lines: summary(&v["totals"]).map_err(|e| format!("totals: {e}"))?,
        files,
    })
}

fn istanbul(v: &serde_json::Value) -> Result<Coverage, String> {
    let lines = |s: &serde_json::Value| -> Result<Lines, String> {
        let l = s.get("lines").ok_or("no `lines`")?;
        Ok(Lines {
            covered: count(l, "covered")?,
            total: count(l, "total")?,
        })
    };
    let mut files = BTreeMap::new();
    for (path, f) in v.as_object().into_iter().flatten() {
        if path != "total" {
            files.insert(path.clone(), lines(f).map_err(|e| format!("{path}: {e}"))?);
        }
    }
    Ok(Coverage {
        format: "istanbul".into(),
        lines: lines(&v["total"]).map_err(|e| format!("total: {e}"))?,
        files,
    })
}

fn lcov(text: &str) -> Result<Coverage, String> {
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
    let mut current: Option<(String, Lines)> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(path) = line.strip_prefix("SF:") {
            current = Some((path.to_string(), Lines::default()));
        } else if let Some(n) = line.strip_prefix("LF:") {
            if let Some((_, l)) = &mut current {
                l.total = n.parse().map_err(|_| format!("LF:{n} is not a count"))?;
            }
        } else if let Some(n) = line.strip_prefix("LH:") {
            if let Some((_, l)) = &mut current {
                l.covered = n.parse().map_err(|_| format!("LH:{n} is not a count"))?;
            }
        } else if line == "end_of_record"
            && let Some((path, l)) = current.take()
        {
            files.entry(path).or_default().add(l);
        }
    }
    Ok(Coverage::of_files("lcov", files))
}

fn go_profile(text: &str) -> Result<Coverage, String> {
    // `file:startline.col,endline.col numstmt count`; a block may repeat (several
    // packages' runs): it counts once, covered if any run covered it.
    let mut blocks: BTreeMap<(String, String), (u64, bool)> = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || format!("line {}: `{line}` is not a cover profile block", i + 1);
        let (place, rest) = line.rsplit_once(':').ok_or_else(bad)?;
        let mut parts = rest.split_whitespace();
        let range = parts.next().ok_or_else(bad)?;
        let stmts: u64 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let hits: u64 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let b = blocks
            .entry((place.to_string(), range.to_string()))
            .or_insert((stmts, false));
        b.1 |= hits > 0;
    }
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
    for ((file, _), (stmts, covered)) in blocks {
        files.entry(file).or_default().add(Lines {
            covered: if covered { stmts } else { 0 },
            total: stmts,
        });
    }
    Ok(Coverage::of_files("go", files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_gives_the_same_kind_of_answer() {
        let py = r#"{"meta": {"version": "7.6"}, "files": {"app.py": {"summary": {"covered_lines": 8, "num_statements": 10}}}, "totals": {"covered_lines": 8, "num_statements": 10, "percent_covered": 80.0}}"#;
        let c = parse(py).unwrap();
        assert_eq!(
            (c.format.as_str(), c.lines, c.lines.percent()),
            (
                "coverage.py",
                Lines {
                    covered: 8,
                    total: 10
                },
                80.0
            )
        );
        assert_eq!(c.files["app.py"].total, 10);
        let js = r#"{"total": {"lines": {"total": 4, "covered": 3, "skipped": 0, "pct": 75}}, "/p/src/a.js": {"lines": {"total": 4, "covered": 3, "skipped": 0, "pct": 75}}}"#;
        let c = parse(js).unwrap();
        assert_eq!((c.format.as_str(), c.lines.percent()), ("istanbul", 75.0));
        assert_eq!(c.files.len(), 1);
        let lcov = "TN:\nSF:src/lib.rs\nDA:1,1\nDA:2,0\nLF:2\nLH:1\nend_of_record\nSF:src/main.rs\nLF:3\nLH:3\nend_of_record\n";
        let c = parse(lcov).unwrap();
        assert_eq!(
            (c.format.as_str(), c.lines),
            (
                "lcov",
                Lines {
                    covered: 4,
                    total: 5
                }
            )
        );
        let go = "mode: set\nex.com/m/a.go:3.10,5.2 2 1\nex.com/m/a.go:7.10,9.2 3 0\nex.com/m/a.go:7.10,9.2 3 1\nex.com/m/b.go:1.1,2.2 1 0\n";
        let c = parse(go).unwrap();
        assert_eq!(
            (c.format.as_str(), c.lines),
            (
                "go",
                Lines {
                    covered: 5,
                    total: 6
                }
            )
        );
        assert_eq!(c.to_json()["lines"]["percent"], 83.33);
        // What is not a report is said so.
        assert!(
            parse("hello")
                .unwrap_err()
                .contains("not a coverage report")
        );
        assert!(
            parse("{\"x\": 1}")
                .unwrap_err()
                .contains("neither coverage.py")
        );
        assert!(
            parse("mode: set\nnonsense\n")
                .unwrap_err()
                .contains("line 2")
        );
        let over = r#"{"totals": {"covered_lines": 500, "num_statements": 10}}"#;
        assert!(parse(over).unwrap_err().contains("500 lines covered of 10"));
    }
}
