//! VALIDATE in a run with no workers: the last iteration's check ran on the tree
//! VALIDATE judges, and what passed there is not run again; a tree changed since is
//! judged anew.

use crate::support::{Project, Scratch, agent};

/// Two tasks whose checks write each run to `shared/ran`; the run's own check is T1's.
fn counted(shared: &tempfile::TempDir, gates: &str) -> Project {
    let count = shared.path().join("count.sh");
    std::fs::write(
        &count,
        format!(
            "echo \"$1\" >> {}\ntest -f \"out/$1\"\n",
            shared.path().join("ran").display()
        ),
    )
    .unwrap();
    Scratch::new()
        .plan(&format!(
            "# Two\n\n## T1: One\nVerify: sh {c} t1\n\n## T2: Two\nDepends: T1\nVerify: sh {c} t2\n",
            c = count.display()
        ))
        .agent(&agent("mkdir -p out\ntouch \"out/t${task#T}\"\necho TASK_COMPLETE"))
        .config(&format!(
            "[verify]\ncommands = [\"sh {c} t1\"]\n\n[sandbox]\nwritable = [\"{}\"]\n{gates}",
            shared.path().display(),
            c = count.display()
        ))
        .build()
}

fn ran(shared: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_to_string(shared.path().join("ran"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// The last iteration (T2's) ran both of VALIDATE's checks on the tree as it is at the
/// end: VALIDATE takes them, and nothing runs after it.
#[test]
fn validate_takes_the_last_iterations_check_on_the_same_tree() {
    let shared = tempfile::tempdir().unwrap();
    let p = counted(&shared, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The baseline: t1, t2; T1's iteration: t1; T2's: t2 and the run's t1.
    // VALIDATE: nothing.
    assert_eq!(ran(&shared), ["t1", "t2", "t1", "t2", "t1"]);
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(md.contains("**passed**"), "{md}");
    assert_eq!(
        md.matches("passed on this tree in the last iteration's check")
            .count(),
        2,
        "{md}"
    );
}

/// The tree changed after the last iteration's check (a person's edit while the run
/// waited at the gate after T2): VALIDATE runs both checks again.
#[test]
fn validate_runs_again_on_a_tree_changed_since_the_last_check() {
    let shared = tempfile::tempdir().unwrap();
    let p = counted(&shared, "\n[gates]\nafter_each = true\n");
    for go in ["run", "resume"] {
        let r = p.run(&[go, "--no-wait"]);
        assert_ne!(r.code, Some(0), "waits at the gate: {}", r.stderr);
        let a = p.run(&["approve"]);
        assert_eq!(a.code, Some(0), "{}\n{}\n{}", r.stderr, a.stdout, a.stderr);
    }
    std::fs::write(p.path().join("NOTES.md"), "a person's note\n").unwrap();
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(ran(&shared), ["t1", "t2", "t1", "t2", "t1", "t1", "t2"]);
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(md.contains("**passed**"), "{md}");
    assert!(!md.contains("last iteration's check"), "{md}");
}
