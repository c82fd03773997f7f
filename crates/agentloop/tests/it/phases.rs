//! The phases of a run beyond develop: a DEBUG iteration once the same failure comes
//! back, whose findings go to the next attempt.

use crate::support::scripted;

const AGENT: &str = r#"if printf '%s' "$prompt" | grep -q 'DEBUG: find the cause'; then
  echo 'HYPOTHESIS: nothing creates fixed.txt | TEST: ls | RESULT: confirmed'
  echo 'HYPOTHESIS: the check looks in the wrong place | TEST: read the Verify line | RESULT: refuted'
  echo 'UNDERSTANDING:'
  echo 'The claim was made without creating fixed.txt.'
elif printf '%s' "$prompt" | grep -q 'The claim was made without creating fixed.txt'; then
  touch fixed.txt
  echo TASK_COMPLETE
else
  date +%N > attempt.txt
  echo TASK_COMPLETE
fi
"#;

#[test]
fn the_same_failure_twice_brings_a_debug_iteration_whose_findings_go_to_the_next() {
    let p = scripted(
        "# Debug\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n",
        AGENT,
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("debugging the repeated failure"),
        "{}",
        r.stderr
    );
    let kinds: Vec<String> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["work", "retry", "debug", "retry"]);
    let dir = p.run_dir().join("iterations/0003");
    let understanding = std::fs::read_to_string(dir.join("understanding.md")).unwrap();
    assert!(understanding.contains("UNDERSTANDING:"), "{understanding}");
    let hypotheses: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("hypotheses.json")).unwrap())
            .unwrap();
    assert_eq!(hypotheses[0]["hypothesis"], "nothing creates fixed.txt");
    assert_eq!(hypotheses[0]["result"], "confirmed");
    assert_eq!(hypotheses[1]["result"], "refuted");
    let debug_prompt = std::fs::read_to_string(dir.join("prompt.md")).unwrap();
    assert!(
        debug_prompt.contains("## The failure that keeps coming back")
            && !debug_prompt.contains("TASK_COMPLETE"),
        "{debug_prompt}"
    );
    // The debug iteration is not verified.
    let verified: Vec<u64> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "verify_finished")
        .map(|e| e["data"]["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(verified, [1, 2, 4]);
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("debug"), "{log}");
}

#[test]
fn debug_after_zero_goes_straight_up_the_ladder() {
    let p = crate::support::Scratch::new()
        .plan("# Debug\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n")
        .agent(&crate::support::agent(AGENT))
        .config("[breakers]\ndebug_after = 0\nsame_failure = 2\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !crate::support::journal_has(&p, "\"kind\":\"debug\""),
        "no debug iteration"
    );
}
