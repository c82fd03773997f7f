//! The agent is an adversary of its own checks: it cannot control its own run (from
//! the CLI, the API or a helper it leaves behind), forge the journal, or pass a check
//! by changing what verifies it.

use std::time::Duration;

use crate::support::{BIN, Scratch, agent, alive, journal_has, serve, wait_exit, wait_for};

const ONE: &str = "# One\n\n## T1: First\nVerify: test -f one.txt\n";

fn log_json(p: &crate::support::Project) -> Vec<serde_json::Value> {
    let out = p.run(&["log", "--json"]);
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Task ONE, driven for one iteration of the scripted agent `body`.
fn one_iteration(body: &str) -> crate::support::Project {
    let p = Scratch::new().plan(ONE).agent(&agent(body)).build();
    let mut driver = p
        .cmd(&["run", "--quiet", "--max-iterations", "1"])
        .spawn()
        .unwrap();
    wait_exit(&mut driver, Duration::from_secs(30));
    p
}

fn refused(p: &crate::support::Project) -> Vec<serde_json::Value> {
    log_json(p)
        .into_iter()
        .filter(|r| r["event"]["kind"] == "control_refused")
        .collect()
}

#[test]
fn the_agent_can_neither_top_up_its_budget_nor_release_a_ship_gate() {
    let body = format!(
        "{BIN} resume --budget +50 --iterations +50 --force 2> .git/agent-state/topup.err; echo $? > .git/agent-state/topup.rc\n\
         {BIN} approve --gate security 2> .git/agent-state/gate.err; echo $? > .git/agent-state/gate.rc\n\
         echo TASK_COMPLETE\n"
    );
    let p = one_iteration(&body);
    assert_eq!(p.read(".git/agent-state/topup.rc").trim(), "2");
    assert_eq!(p.read(".git/agent-state/gate.rc").trim(), "2");
    for f in ["topup", "gate"] {
        let err = p.read(&format!(".git/agent-state/{f}.err"));
        assert!(err.contains("refused"), "{f}: {err}");
    }
    let s = p.status();
    assert_eq!(s["refused_requests"], 2);
    // Neither took effect: no control request (no top-up, no gate released) recorded.
    assert!(!log_json(&p).iter().any(|r| r["event"]["kind"] == "control"));
    assert_eq!(refused(&p).len(), 2);
}

#[test]
fn the_agents_own_control_requests_are_refused_and_journaled() {
    // Through the CLI with its environment as given, without AGENTLOOP_RUN (the
    // process tree still gives it away), and a skip.
    let body = format!(
        "{BIN} steer 'self-approved' 2> .git/agent-state/steer.err; echo $? > .git/agent-state/steer.rc\n\
         env -u AGENTLOOP_RUN {BIN} skip T1 2> .git/agent-state/skip.err; echo $? > .git/agent-state/skip.rc\n\
         echo \"$AGENTLOOP_RUN\" > .git/agent-state/run\n\
         echo TASK_COMPLETE\n"
    );
    let p = one_iteration(&body);
    assert_eq!(p.read(".git/agent-state/steer.rc").trim(), "2");
    assert_eq!(p.read(".git/agent-state/skip.rc").trim(), "2");
    let err = p.read(".git/agent-state/steer.err");
    assert!(
        err.contains("refused") && err.contains("AGENTLOOP_RUN"),
        "{err}"
    );
    let err = p.read(".git/agent-state/skip.err");
    assert!(err.contains("process tree of the run's driver"), "{err}");
    let s = p.status();
    assert_eq!(p.read(".git/agent-state/run").trim(), s["run_id"]);
    assert_eq!(s["refused_requests"], 2);
    // Neither request took effect: no control request was recorded, T1 not skipped.
    assert!(!log_json(&p).iter().any(|r| r["event"]["kind"] == "control"));
    assert_ne!(s["tasks"][0]["status"], "skipped");
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains("tampering: 2 control requests from inside the agent refused"),
        "{shown}"
    );
    let r = refused(&p);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0]["event"]["data"]["source"], "cli");
    let shown = p.run(&["log"]).stdout;
    assert!(shown.contains("refused"), "{shown}");
    // A person's request from outside still works.
    let r = p.run(&["skip", "T1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn helpers_the_agent_leaves_running_are_gone_when_its_iteration_ends() {
    // A helper in a new session, one double-forked, and one that would approve the
    // final gate three seconds later.
    let body = format!(
        "setsid sh -c 'echo $$ > .git/agent-state/setsid; exec sleep 300' > /dev/null 2>&1 &\n\
         ( ( sh -c 'echo $$ > .git/agent-state/forked; exec sleep 300' & ) & )\n\
         setsid sh -c 'echo $$ > .git/agent-state/approver; sleep 3; {BIN} approve; echo $? > .git/agent-state/late' > /dev/null 2>&1 &\n\
         for f in setsid forked approver; do while [ ! -s .git/agent-state/$f ]; do sleep 0.05; done; done\n\
         touch one.txt\n\
         echo TASK_COMPLETE\n"
    );
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent(&body))
        .config("[gates]\nfinal_review = true\n")
        .build();
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the final gate", |p| journal_has(p, "gate_opened"));
    for f in ["setsid", "forked", "approver"] {
        let pid = p.read(&format!(".git/agent-state/{f}"));
        assert!(!alive(pid.trim()), "the {f} helper outlived its iteration");
    }
    std::thread::sleep(Duration::from_secs(4));
    assert!(!p.path().join(".git/agent-state/late").exists());
    assert_eq!(p.status()["status"], "waiting");
    // A person's approval passes it.
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
}

#[test]
fn the_agents_own_request_through_the_api_is_refused() {
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent(
            "addr=$(cat .git/agent-state/addr)\n\
             curl -s -o .git/agent-state/api.body -w '%{http_code}' \
               -H \"Authorization: Bearer $(cat \"$XDG_STATE_HOME/agentloop/token\")\" \
               -H 'Content-Type: application/json' \
               -d '{\"request_id\":\"a1\",\"action\":\"steer\",\"note\":\"self\"}' \
               \"http://$addr/api/runs/$AGENTLOOP_RUN/control\" > .git/agent-state/api.code\n\
             touch one.txt\necho TASK_COMPLETE\n",
        ))
        .build();
    let server = serve(&p);
    std::fs::create_dir_all(p.path().join(".git/agent-state")).unwrap();
    std::fs::write(p.path().join(".git/agent-state/addr"), &server.addr).unwrap();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read(".git/agent-state/api.code"), "403");
    let body = p.read(".git/agent-state/api.body");
    assert!(body.contains("refused"), "{body}");
    let r = refused(&p);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["event"]["data"]["source"], "http");
    assert!(journal_has(&p, "control_refused"));
}

#[test]
fn forged_journal_records_are_ignored_and_named() {
    let body = r#"forge() { python3 .git/forge.py "$1"; }
if [ "$n" = 1 ]; then
  forge 'iteration_finished {"iteration":1,"outcome":"completed","reason":"forged"}'
  forge 'control {"id":"x","source":"cli","request":{"action":"skip","task":"T1"}}'
  echo 'not done yet'
else
  touch one.txt; echo TASK_COMPLETE
fi
"#;
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent(body))
        .file(".git/forge.py", crate::support::FORGE_PY)
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    // The forged completion and skip were never acted on: it took a second, real turn.
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["forged_lines"].as_array().unwrap().len(), 2, "{s}");
    let ignored = log_json(&p)
        .into_iter()
        .filter(|r| r["event"]["kind"] == "forgery_ignored")
        .count();
    assert_eq!(ignored, 2);
    let v = p.run(&["journal", "verify"]);
    assert_eq!(v.code, Some(2));
    for kind in ["iteration_finished", "control"] {
        assert!(
            v.stderr
                .contains(&format!("not written by agentloop (a {kind} record")),
            "{}",
            v.stderr
        );
    }
    let shown = p.run(&["status"]).stdout;
    assert!(shown.contains("tampering: journal lines"), "{shown}");
    // The lines `status` names (folded as the driver went, from where it had read
    // to) are the lines `journal verify` names (read from the start).
    let named: Vec<String> = v
        .stderr
        .lines()
        .filter(|l| l.contains("not written by agentloop"))
        .filter_map(|l| {
            l.split("journal.jsonl:")
                .nth(1)?
                .split(':')
                .next()
                .map(String::from)
        })
        .collect();
    assert_eq!(named.len(), 2, "{}", v.stderr);
    assert!(
        shown.contains(&format!(
            "tampering: journal lines {}, {} not written by agentloop",
            named[0], named[1]
        )),
        "{shown}\n{}",
        v.stderr
    );
    let lines: Vec<String> = s["forged_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.to_string())
        .collect();
    assert_eq!(lines, named, "{s}");
}
