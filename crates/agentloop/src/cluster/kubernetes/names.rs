//! The names agentloop gives what it makes on Kubernetes: a Job's (and its Secret's)
//! from the job's token, and label values.

/// A Job's name from its token `agentloop-RUN-N-NONCE` ([`Submission::name`](super::super::Submission::name)): a DNS
/// label of at most 63 characters that keeps the iteration and the nonce (the run's
/// id is cut when it is long).
pub fn job_name(token: &str) -> String {
    let label: String = token
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let (head, tail) = match label.rsplitn(3, '-').collect::<Vec<_>>().as_slice() {
        [nonce, n, head] => (head.to_string(), format!("-{n}-{nonce}")),
        _ => (label.clone(), String::new()),
    };
    let room = 63usize.saturating_sub(tail.len());
    let head: String = head.chars().take(room).collect();
    format!("{}{tail}", head.trim_end_matches('-'))
}

/// `s` as a label value: letters, digits, `-`, `_`, `.`, at most 63, alphanumeric at
/// both ends.
pub(super) fn label_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    v.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(
            job_name("agentloop-20261122-104259-042-3fa2-7-0a1b2c3d"),
            "agentloop-20261122-104259-042-3fa2-7-0a1b2c3d"
        );
        let long = job_name(&format!(
            "agentloop-{}-12345-0a1b2c3d",
            "Run_1.x".repeat(20)
        ));
        assert!(
            long.len() <= 63 && long.ends_with("-12345-0a1b2c3d"),
            "{long}"
        );
        assert!(
            long.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }
}
