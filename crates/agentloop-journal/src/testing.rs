//! What the tests of this crate and the crates above it share (not for use outside
//! tests: compiled in so that the crates above need no feature to reach it).

use agentloop_config::Settings;

use crate::event::Event;
use crate::state::RunState;
use crate::store::Record;

/// The state of a run just created from `plan` (PLAN.md's text) with `settings`.
pub fn created(plan: &str, settings: Settings) -> RunState {
    // A plan its planners grow may have no task yet.
    let plan = agentloop_plan::Plan::parse_unchecked("PLAN.md", plan).unwrap();
    RunState::from_first(&Record {
        seq: 1,
        time: "2026-11-27T10:00:00.000Z".into(),
        event: Event::RunCreated {
            run_id: "r".into(),
            plan_file: "PLAN.md".into(),
            workdir: "/w".into(),
            plan,
            settings,
            head: None,
            tree: None,
        },
    })
    .unwrap()
}

/// `event` applied to `s` as the run's next record.
pub fn then(s: &mut RunState, event: Event) {
    let seq = s.last_seq + 1;
    s.apply(&Record {
        seq,
        time: "2026-11-27T10:00:01.000Z".into(),
        event,
    });
}

/// `event` applied to `s` as the run's next record, written `secs` seconds after the
/// run was created.
pub fn then_at(s: &mut RunState, secs: u64, event: Event) {
    let seq = s.last_seq + 1;
    let time = humantime::parse_rfc3339("2026-11-27T10:00:00.000Z").unwrap()
        + std::time::Duration::from_secs(secs);
    s.apply(&Record {
        seq,
        time: humantime::format_rfc3339_millis(time).to_string(),
        event,
    });
}
