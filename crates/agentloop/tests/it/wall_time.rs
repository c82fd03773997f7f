//! `max_duration` is the run's own wall time: with workers, lanes at work together
//! spend it together, and the time they add up is shown apart as agent time.

use crate::support::scripted;

const SIX: &str = "# Six\n\n## T1: One\nVerify: test -f T1.txt\n\n## T2: Two\nVerify: test -f T2.txt\n\n## T3: Three\nVerify: test -f T3.txt\n\n## T4: Four\nVerify: test -f T4.txt\n\n## T5: Five\nVerify: test -f T5.txt\n\n## T6: Six\nVerify: test -f T6.txt\n";

/// Twelve tasks of four seconds on three workers: four rounds, 48 s of agent time in
/// about 18 s of the run's. A lane starts its next task before the last is merged (and
/// its iteration counted), so when the fourth round starts, at about 13 s of the
/// run's time, two rounds are counted: 24 s of the lanes' time. A 20 s limit on the
/// run's time lets it start; counting the lanes' time added up, the run stopped there.
#[test]
fn workers_spend_the_runs_time_together_and_their_agent_time_is_shown_apart() {
    let p = scripted(&twelve(), "sleep 4\ntouch $task.txt\necho TASK_COMPLETE");
    let r = p.run(&["run", "--quiet", "--workers", "3", "--max-duration", "20s"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, p.run(&["log"]).stdout);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let (wall, agent) = (
        s["wall_ms"].as_u64().unwrap(),
        s["active_ms"].as_u64().unwrap(),
    );
    assert!(agent >= 48_000, "twelve iterations of 4 s: {agent} ms");
    assert!(
        wall < agent,
        "the run's time {wall} ms, its lanes' {agent} ms"
    );
    let text = p.run(&["status"]).stdout;
    assert!(
        text.contains("agent time") && text.contains("over 3 lanes"),
        "{text}"
    );
}

fn twelve() -> String {
    let mut plan = String::from("# Twelve\n");
    for n in 1..=12 {
        plan.push_str(&format!("\n## T{n}: Task {n}\nVerify: test -f T{n}.txt\n"));
    }
    plan
}

/// One lane: the limit stops the run once its time is spent, with the time as the
/// budget it spent.
#[test]
fn one_lane_stops_when_the_runs_time_is_spent() {
    let p = scripted(SIX, "sleep 2\ntouch $task.txt\necho TASK_COMPLETE");
    let r = p.run(&["run", "--quiet", "--max-duration", "3s"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("budget spent: time"), "{log}");
    let done = p.status()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "done")
        .count();
    assert!((1..6).contains(&done), "{done} tasks done in 3 s: {log}");
}
