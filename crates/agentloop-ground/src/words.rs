//! Words for counts in messages a person reads.

/// `1 task`, `2 tasks`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Someone else's sentence as a clause of ours: without its own closing period, so
/// `"{}. Fix it"` never reads `Invalid API key.. Fix it`.
pub fn clause(text: &str) -> &str {
    let t = text.trim_end();
    match t.strip_suffix('.') {
        Some(rest) if !rest.ends_with('.') => rest,
        _ => t,
    }
}

/// A settings key below `prefix`: `budgets` + `max_iterations` → `budgets.max_iterations`.
pub fn dotted(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Dollars as a person reads them, the same everywhere (CLI, progress.md, dashboard):
/// two decimals from $1 up, and below it up to four, so the cents of small
/// iterations add up to what the total says (`$0.0149` × 3 = `$0.0447`).
pub fn money(usd: f64) -> String {
    if usd.abs() >= 1.0 {
        return format!("${usd:.2}");
    }
    let four = format!("{usd:.4}");
    let trimmed = four.trim_end_matches('0');
    let decimals = trimmed.split('.').nth(1).map_or(0, str::len);
    if decimals < 2 {
        format!("${usd:.2}")
    } else {
        format!("${trimmed}")
    }
}

/// `a + b` kept to whole micro-dollars, so sums of costs do not drift.
pub fn add_usd(a: f64, b: f64) -> f64 {
    ((a + b) * 1e6).round() / 1e6
}

/// A size in bytes as people read it: `812 B`, `14.2 MB`, `3.1 GB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_clause_has_no_period_of_its_own() {
        assert_eq!(super::clause("Invalid API key. "), "Invalid API key");
        assert_eq!(super::clause("wait..."), "wait...");
        assert_eq!(super::clause("no period"), "no period");
    }

    use super::*;

    #[test]
    fn money_keeps_small_amounts_that_add_up() {
        assert_eq!(money(0.0), "$0.00");
        assert_eq!(money(0.01), "$0.01");
        assert_eq!(money(0.0149), "$0.0149");
        let total = (0..3).fold(0.0, |t, _| add_usd(t, 0.0149));
        assert_eq!(money(total), "$0.0447");
        assert_eq!(money(12.345), "$12.35");
        assert_eq!(money(0.1), "$0.10");
        let cents = (0..3).fold(0.0, |t, _| add_usd(t, 0.01));
        assert_eq!(money(cents), "$0.03");
    }
}
