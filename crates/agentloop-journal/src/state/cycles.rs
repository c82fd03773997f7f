//! How a cycle's verdict moves the state.

use agentloop_ground::words::add_usd;

use super::RunState;
use crate::cycles::{CycleJudged, CycleVerdict};

impl RunState {
    pub(crate) fn cycle_judged(&mut self, j: &CycleJudged, at_ms: u64) {
        self.cost_usd = add_usd(self.cost_usd, j.cost_usd);
        self.cycles.judged = self.cycles.judged.max(j.cycle);
        self.cycles.since_ms = at_ms;
        self.cycles.done_at_start = self.done_count() as u32;
        self.cycles.last = Some((j.verdict, j.reasons.clone()));
        if j.verdict == CycleVerdict::Restart {
            for t in &mut self.tasks {
                if !t.status.is_settled() {
                    t.fresh_start = true;
                }
            }
        }
    }
}
