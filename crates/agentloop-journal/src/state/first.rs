//! A run's state as its first record, `run_created`, makes it.

use std::collections::HashMap;

use super::*;

impl RunState {
    pub fn from_first(first: &Record) -> Result<RunState, FoldError> {
        let Event::RunCreated {
            run_id,
            plan_file,
            workdir,
            plan,
            settings,
            head,
            tree,
        } = &first.event
        else {
            return Err(FoldError::NoRunCreated(first.event.kind()));
        };
        let mut s = RunState {
            v: STATE_VERSION,
            run_id: run_id.clone(),
            status: RunStatus::Running,
            plan_file: plan_file.clone(),
            workdir: workdir.clone(),
            head_at_create: head.clone(),
            tree_at_create: tree.clone(),
            plan: Plan {
                title: String::new(),
                goal: String::new(),
                settings: Default::default(),
                shaped: Default::default(),
                must_not: Vec::new(),
                criteria: Vec::new(),
                tasks: vec![],
            },
            plan_version: 1,
            settings: settings.clone(),
            tasks: Vec::new(),
            iterations: 0,
            aborted: 0,
            cost_usd: 0.0,
            usage: Usage::default(),
            active_ms: 0,
            wall_ms: 0,
            last_ms: first.time_ms(),
            running: Vec::new(),
            paused: false,
            stop: None,
            gate: None,
            plan_approved: false,
            plan_reviewed: false,
            final_approved: false,
            steer: Vec::new(),
            learnings: Vec::new(),
            learned_at: Vec::new(),
            completed_log: Vec::new(),
            patterns: Default::default(),
            reported: Vec::new(),
            approvals: Vec::new(),
            skills_skipped: Default::default(),
            prerequisites: None,
            validation: None,
            validation_failure: None,
            validation_fixes: 0,
            validation_not_the_work: None,
            unconfined_checks: None,
            replans_used: 0,
            written: Default::default(),
            finished: None,
            limit_until_ms: None,
            agent_limits: Default::default(),
            agent_caps: Default::default(),
            planning: Default::default(),
            cycles: Default::default(),
            limit_message: None,
            limit_streak: 0,
            last_seq: first.seq,
            created: first.time.clone(),
            updated: first.time.clone(),
            driver_pid: None,
            session: None,
            session_pid: None,
            agent_session: None,
            refused_requests: 0,
            sandbox: Default::default(),
            hook_chain: 0,
            journal_bytes: 0,
            baseline: None,
            tests_baseline: None,
            surface_approved: Vec::new(),
            integration: None,
            ship: Default::default(),
            budget_spent: None,
            top_up: TopUp::default(),
            forged: Vec::new(),
            index: HashMap::new(),
            requests: String::new(),
        };
        s.set_plan(plan.clone());
        s.status = s.derive_status();
        Ok(s)
    }
}
