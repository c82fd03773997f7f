//! Every kill of a run, each from a copy of the run without faults at its kill: a
//! driver killed after effect *k* left exactly what the run without faults had after
//! *k*, so the killed run goes on from a copy of that world (as the next driver would)
//! instead of replaying the first *k* effects again.

use std::cell::RefCell;
use std::rc::Rc;

use super::scenario::Scenario;
use super::world::{Faults, Forks, Run, World};

/// Runs `sc` without faults, and after each of its effects from the second on that
/// `at` names a run killed there (and, where the effect is a line of the driver's,
/// one killed with that line torn too), each told to `killed` as it ends. Each killed
/// run goes on from a copy of the run without faults at its kill, which ends as `run`
/// with that one kill does, in about half the work. Returns the run without faults.
pub fn run_killed_at<'a>(
    sc: &'a Scenario,
    at: impl Fn(u64) -> bool + 'a,
    killed: impl FnMut(u64, bool, Run) + 'a,
) -> Run {
    let (mut w, settings) = World::new(sc, &Faults::default());
    w.forks = Some(Rc::new(RefCell::new(Forks {
        at: Box::new(at),
        killed: Box::new(killed),
    })));
    let stuck = w.drive_to_end(settings);
    w.forks = None;
    w.into_run(stuck)
}

impl World<'_> {
    /// At an effect just taken (a driver's line of `line` bytes, or another effect):
    /// the runs killed here, when this run tries them.
    pub(super) fn try_kills_here(&mut self, line: Option<usize>) {
        let Some(forks) = self.forks.clone() else {
            return;
        };
        if self.effects < 2 || !(forks.borrow().at)(self.effects) {
            return;
        }
        for torn in [false, true] {
            if torn && line.is_none() {
                continue;
            }
            let mut killed = self.clone();
            killed.forks = None;
            if let (true, Some(len)) = (torn, line) {
                let keep = killed.journal.len() - len / 2;
                killed.journal.truncate(keep);
            }
            let stuck = match killed.come_back() {
                Ok(settings) => killed.drive_to_end(settings),
                Err(why) => Some(why),
            };
            (forks.borrow_mut().killed)(self.effects, torn, killed.into_run(stuck));
        }
    }
}
