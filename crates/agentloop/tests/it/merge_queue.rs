//! The merge queue in batches: verified tasks that wait together are merged together
//! and checked once; a red batch is bisected to the task that turns it red, which
//! alone goes back to its agent.

use crate::workers::{events, git, integration, nothing_left, project};

const FOUR: &str = "# Four\n\n## T1: One\nVerify: test -f out/t1\n\n## T2: Two\nVerify: test -f out/t2\n\n## T3: Three\nVerify: test -f out/t3\n\n## T4: Four\nVerify: test -f out/t4\n";

/// A run-wide check, `gate.sh` in `shared`: in a task's copy it counts the
/// verification; on a merged result (the merge worktree) it first waits until all
/// four tasks were verified, so the tasks verified meanwhile wait in the queue
/// together, and counts the check in `merged-checks`. It fails where both clash
/// files are.
fn gated(shared: &tempfile::TempDir) -> std::path::PathBuf {
    let gate = shared.path().join("gate.sh");
    let seen = shared.path().join("verified");
    std::fs::create_dir(&seen).unwrap();
    std::fs::write(
        &gate,
        format!(
            r#"seen={seen}
case "$(basename "$PWD")" in
  _merge)
    i=0
    while [ "$(ls "$seen" | wc -l)" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
    echo checked >> {merged}
    sleep 1 ;;
  *) touch "$seen/$$" ;;
esac
test ! -f out/clash-2 || test ! -f out/clash-3
"#,
            seen = seen.display(),
            merged = shared.path().join("merged-checks").display()
        ),
    )
    .unwrap();
    gate
}

fn batches(ev: &[serde_json::Value]) -> (usize, usize) {
    let mut heads: Vec<String> = Vec::new();
    let mut started = 0;
    for e in ev.iter().filter(|e| e["kind"] == "merge_started") {
        started += 1;
        let h = e["data"]["head"].as_str().unwrap().to_string();
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    (heads.len(), started)
}

fn merged_checks(shared: &tempfile::TempDir) -> usize {
    std::fs::read_to_string(shared.path().join("merged-checks"))
        .unwrap()
        .lines()
        .count()
}

#[test]
fn tasks_waiting_together_are_merged_and_checked_once() {
    let shared = tempfile::tempdir().unwrap();
    let gate = gated(&shared);
    let p = project(
        FOUR,
        "mkdir -p out\ntouch \"out/t${task#T}\"\necho TASK_COMPLETE",
        &format!(
            "[verify]\ncommands = [\"sh {}\"]\n\n[merge]\nbatch = 4\n",
            gate.display()
        ),
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let (batches, started) = batches(&ev);
    assert_eq!(started, 4, "each task merged once");
    assert!(batches < 4, "every merge alone");
    // One check on the merged result per batch.
    assert_eq!(merged_checks(&shared), batches);
    assert_eq!(ev.iter().filter(|e| e["kind"] == "merged").count(), 4);
    let log = p.run(&["log"]).stdout;
    assert!(!log.contains("back in the merge queue"), "{log}");
    nothing_left(&p);
}

#[test]
fn a_red_batch_is_bisected_and_only_the_task_that_turns_it_red_goes_back() {
    // T2 and T3 each leave a file that is fine alone and breaks the run-wide check
    // beside the other's: whichever of them is merged second is the one to blame.
    let shared = tempfile::tempdir().unwrap();
    let gate = gated(&shared);
    let p = project(
        FOUR,
        r#"mkdir -p out
k=${task#T}
touch "out/t$k"
# The first attempt of T2 and T3 leaves its clash file; told it broke the merged
# result, the next one takes it away.
case "$task:$n" in T2:1|T3:1) touch "out/clash-$k" ;; *) rm -f "out/clash-$k" ;; esac
echo TASK_COMPLETE"#,
        &format!(
            "[verify]\ncommands = [\"sh {}\"]\n\n[merge]\nbatch = 4\n",
            gate.display()
        ),
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let (batches, started) = batches(&ev);
    assert!(batches < started, "every merge alone");
    // Exactly one of T2 and T3 was blamed, for the merged result, not a conflict;
    // it alone went back to its agent.
    let failed: Vec<_> = ev.iter().filter(|e| e["kind"] == "merge_failed").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["data"]["conflict"], false);
    let reason = failed[0]["data"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("on the merged result"), "{reason}");
    let s = p.status();
    let attempts: Vec<u64> = (0..4)
        .map(|i| s["tasks"][i]["attempts"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts[0] + attempts[3], 2, "T1 and T4: once each");
    assert_eq!(
        attempts[1] + attempts[2],
        3,
        "one of T2 and T3 twice: {attempts:?}"
    );
    assert!(
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "done")
    );
    assert_eq!(ev.iter().filter(|e| e["kind"] == "merged").count(), 4);
    assert!(
        merged_checks(&shared) > batches,
        "the red batch was bisected"
    );
    // The branch has each task's work and one of the clash files, never both; and
    // every task is its own merge commit on it.
    let branch = integration(&p);
    let files = git(&p, &["ls-tree", "-r", "--name-only", &branch, "out"]);
    for f in ["out/t1", "out/t2", "out/t3", "out/t4"] {
        assert!(files.lines().any(|l| l == f), "{f} not in {files}");
    }
    assert_eq!(files.matches("clash").count(), 1, "{files}");
    let merges_on_branch = git(&p, &["log", "--merges", "--format=%s", &branch]);
    for t in ["T1", "T2", "T3", "T4"] {
        assert_eq!(
            merges_on_branch
                .matches(&format!("agentloop: {t} "))
                .count(),
            1,
            "{merges_on_branch}"
        );
    }
    nothing_left(&p);
}
