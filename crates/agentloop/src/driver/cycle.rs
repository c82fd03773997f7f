//! The judge at the end of each cycle (`[run] cycle`, `policy::cycles`): the rule, or
//! `[run] judge`'s agent — read-only, in a throwaway copy of the work so far, told
//! how the cycle went — and its verdict recorded. An agent that gives no verdict
//! agentloop reads leaves it to the rule (said in the reasons).

use std::time::Instant;

use agentloop_journal::{CycleJudged, Event};
use agentloop_policy as policy;

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// The verdict on cycle `cycle`, recorded.
    pub(crate) fn judge_cycle(&mut self, cycle: u32) -> Result<(), CliError> {
        let (rule_verdict, rule_reasons) = policy::cycle_rule(&self.state);
        let judged = match self.state.settings.judge.clone() {
            None => CycleJudged {
                cycle,
                verdict: rule_verdict,
                reasons: rule_reasons,
                by: "rule".into(),
                cost_usd: 0.0,
            },
            Some(agent) => {
                let (answer, cost_usd) = self.ask_judge(&agent, cycle);
                match answer.as_deref().ok().and_then(policy::parse_judgement) {
                    Some((verdict, reasons)) => CycleJudged {
                        cycle,
                        verdict,
                        reasons,
                        by: agent,
                        cost_usd,
                    },
                    None => {
                        let why = match answer {
                            Err(e) => e,
                            Ok(_) => "its answer has no `JUDGE:` line".into(),
                        };
                        let mut reasons = vec![format!(
                            "the judge {agent} gave no verdict ({why}): the rule decides"
                        )];
                        reasons.extend(rule_reasons);
                        CycleJudged {
                            cycle,
                            verdict: rule_verdict,
                            reasons,
                            by: "rule".into(),
                            cost_usd,
                        }
                    }
                }
            }
        };
        self.progress.note(&format!(
            "cycle {cycle}: {} ({})",
            judged.verdict.as_str(),
            judged.reasons.join("; ")
        ));
        self.record(Event::CycleJudged(judged))
    }

    /// The judging agent's answer (its final message) and what it cost.
    fn ask_judge(&mut self, agent: &str, cycle: u32) -> (Result<String, String>, f64) {
        let dir = self.run.path.join("cycles").join(format!("cycle-{cycle}"));
        let prompt = policy::judge_prompt(&self.state, cycle);
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| {
            agentloop_ground::fsutil::write_atomic(&dir.join("prompt.md"), prompt.as_bytes())
        }) {
            return (Err(format!("{}: {e}", dir.display())), 0.0);
        }
        let resolved = match agentloop_agents::resolve_read_only(&self.config, agent) {
            Ok((a, _)) => a,
            Err(e) => return (Err(format!("it cannot start: {e}")), 0.0),
        };
        let workdir = match self.throwaway_copy("judge") {
            Ok(w) => w,
            Err(e) => return (Err(format!("no copy of the work to read: {e}")), 0.0),
        };
        let confined = match self.confine_in(&workdir, &dir, agent) {
            Ok(c) => c,
            Err(e) => return (Err(e.message), 0.0),
        };
        let (run_id, run_dir) = (self.run.id.clone(), self.run.path.clone());
        let log = dir.join("agent.log");
        let inv = agentloop_agents::Invocation {
            run_id: &run_id,
            run_dir: &run_dir,
            iteration: 0,
            workdir: &workdir,
            prompt: &prompt,
            prompt_file: &dir.join("prompt.md"),
            log: &log,
            pid_file: &dir.join("agent.pid"),
            wrap: confined.prefix.clone(),
        };
        let mut last = Instant::now();
        let run = resolved.run(&inv, &mut || self.should_stop(&mut last));
        let _ = self.redactor(agent).scrub_file(&log);
        match &run.error {
            Some(e) => (Err(format!("it failed: {}", e.message)), run.cost_usd),
            None => (Ok(run.final_message.clone()), run.cost_usd),
        }
    }
}
