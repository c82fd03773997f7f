//! Secrets stay out of what a run writes: an agent's `env` and the driver's own
//! variables named like secrets are redacted from the agent's log, the checks' logs,
//! the journal and the records kept for VALIDATE, with workers as without.

use crate::support::*;

/// Runs `p` to its end with the key in the driver's own environment too (so the
/// checks see it), and finds it in no file under `.agentloop/`.
fn run_with_the_key(p: &Project) {
    let r: Run = p
        .cmd(&["run", "--quiet"])
        .env("MY_API_KEY", "sk-live-0123456789abcdef")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let leaked = leaked(p, "sk-live-0123456789abcdef");
    assert!(leaked.is_empty(), "the secret is on disk in {leaked:?}");
}

/// Files under the project's `.agentloop/` that hold `secret`.
fn leaked(p: &Project, secret: &str) -> Vec<String> {
    p.tree()
        .into_iter()
        .filter(|(path, bytes)| {
            path.starts_with(".agentloop/") && String::from_utf8_lossy(bytes).contains(secret)
        })
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn secrets_are_redacted_from_logs_and_the_journal() {
    let plan = "# S\n\n## T1: Leak\nVerify: echo \"verify sees $MY_API_KEY\"; test -f one.txt\n";
    let p = Scratch::new().plan(plan).agent(&agent(
            "echo \"my key is $MY_API_KEY\"\nif [ \"$n\" -ge 2 ]; then touch one.txt; fi\necho TASK_COMPLETE\n",
        )).config("[agents.scripted.env]\nMY_API_KEY = \"sk-live-0123456789abcdef\"\n").build();
    run_with_the_key(&p);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    assert!(log.contains("my key is [REDACTED:MY_API_KEY]"), "{log}");
    let verify = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        verify.contains("verify sees [REDACTED:MY_API_KEY]"),
        "{verify}"
    );
}

/// The merge queue checks a batch off the driver's thread: what its checks print and
/// the record of the landed commit kept for VALIDATE have the secrets out too.
#[test]
fn secrets_are_redacted_from_the_merge_queues_logs_and_records() {
    let p = crate::workers::project(
        "# S\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n",
        "if [ \"$task\" = T1 ]; then touch one.txt; else touch two.txt; fi\necho TASK_COMPLETE",
        "[verify]\ncommands = [\"echo merged sees $MY_API_KEY\"]\n\n[agents.scripted.env]\nMY_API_KEY = \"sk-live-0123456789abcdef\"\n",
    );
    run_with_the_key(&p);
    let merge_logs: Vec<String> = p
        .tree()
        .into_iter()
        .filter(|(path, _)| path.ends_with("/merge.log"))
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    assert!(
        merge_logs
            .iter()
            .any(|l| l.contains("merged sees [REDACTED:MY_API_KEY]")),
        "{merge_logs:?}"
    );
    let kept = p
        .tree()
        .into_iter()
        .filter(|(path, _)| path.contains("/checked/"))
        .count();
    assert!(kept > 0, "the landed commit's check is kept for VALIDATE");
}
