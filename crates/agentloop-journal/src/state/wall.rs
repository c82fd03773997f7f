//! The run's own wall time, as the fold counts it.

use crate::event::Event;
use crate::person::Request;
use crate::testing::{created, then_at};

fn asks(s: &mut crate::state::RunState, at: u64, request: Request) {
    then_at(
        s,
        at,
        Event::Control {
            id: format!("c{at}"),
            source: "cli".into(),
            request,
            by: None,
        },
    );
}

fn driver(s: &mut crate::state::RunState, at: u64) {
    let settings = s.settings.clone();
    then_at(
        s,
        at,
        Event::DriverStarted {
            pid: 7,
            version: "0".into(),
            settings,
            agents: Default::default(),
            prerequisites: None,
        },
    );
}

#[test]
fn wall_time_runs_while_the_run_runs_not_while_it_waits_for_a_person_or_a_driver() {
    let mut s = created(
        "# P\n\n## T1: One\nVerify: true\n",
        agentloop_config::Settings::from_config(&Default::default()),
    );
    // Created, then driven 10 s later: no driver meanwhile.
    driver(&mut s, 10);
    assert_eq!(s.wall_ms, 0);
    asks(&mut s, 15, Request::Steer { note: "a".into() });
    assert_eq!(s.wall_ms, 5_000);
    // Paused for 30 s: a person's time, not the run's.
    asks(&mut s, 20, Request::Pause);
    asks(&mut s, 50, Request::Resume);
    assert_eq!(s.wall_ms, 10_000);
    asks(&mut s, 53, Request::Steer { note: "b".into() });
    assert_eq!(s.wall_ms, 13_000);
    // The driver dies; another takes the run over 47 s later.
    driver(&mut s, 100);
    asks(&mut s, 101, Request::Steer { note: "c".into() });
    assert_eq!(s.wall_ms, 14_000);
    // Lanes' time is apart: no iteration ran.
    assert_eq!(s.active_ms, 0);
}
