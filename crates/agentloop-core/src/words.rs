//! Words for counts in messages a person reads.

/// `1 task`, `2 tasks`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
