//! A task's per-test evidence as people see it (`status`, the API, the dashboard,
//! `summary.md`): its named tests with their outcome at the baseline and now, the
//! regressions, the tests no longer run; or that it rests on exit codes alone.

use serde::Serialize;

use crate::state::RunState;
use crate::task::{TaskState, TaskStatus};
use agentloop_evidence::{Outcome, Seen};

/// One test of a task's evidence.
#[derive(Debug, Clone, Serialize)]
pub struct TestRow {
    pub id: String,
    /// Its outcome at the run's baseline (`null`: not collected then).
    pub at_baseline: Option<Outcome>,
    /// Its outcome in the verification (`null`: absent from the report).
    pub now: Option<Outcome>,
    /// The iteration that verification belonged to.
    pub iteration: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskEvidence {
    /// Named tests (`Tests:`), and how many pass.
    pub named: usize,
    pub named_passing: usize,
    /// The named tests (FAIL_TO_PASS), one row each.
    pub tests: Vec<TestRow>,
    /// Tests that passed before and do not now (PASS_TO_PASS).
    pub regressions: Vec<TestRow>,
    /// Tests collected at the baseline that no longer run.
    pub dropped: Vec<TestRow>,
    pub flaky: Vec<String>,
    /// Names no report matched.
    pub unmatched: Vec<String>,
    /// Its checks gave no per-test evidence: their exit codes decided.
    pub exit_code_only: bool,
}

impl TaskEvidence {
    /// `2/2 named tests pass · regressions none`, or why there is no evidence.
    pub fn words(&self) -> String {
        if self.exit_code_only {
            return "exit code only: no per-test evidence".into();
        }
        let mut out = if self.named > 0 {
            format!("{}/{} named tests pass", self.named_passing, self.named)
        } else {
            "no named tests".to_string()
        };
        out.push_str(&match self.regressions.len() {
            0 => " · regressions none".to_string(),
            n => format!(
                " · {} regressed",
                agentloop_ground::words::plural(n, "test", "tests")
            ),
        });
        if !self.dropped.is_empty() {
            out.push_str(&format!(" · {} no longer run", self.dropped.len()));
        }
        out
    }
}

/// A test's row; its outcome at the baseline from `seen`, else looked up in every
/// check's baseline (`collected`, built at most once per task, when first needed).
fn row<'a>(
    s: &'a RunState,
    collected: &std::cell::OnceCell<std::collections::BTreeMap<&'a str, Outcome>>,
    seen: &Seen,
    iteration: Option<u32>,
) -> TestRow {
    let at_baseline = seen.before.or_else(|| {
        let b = s.tests_baseline.as_ref()?;
        collected
            .get_or_init(|| b.all_tests())
            .get(seen.id.as_str())
            .copied()
    });
    TestRow {
        id: seen.id.clone(),
        at_baseline,
        now: seen.now,
        iteration,
        message: seen.message.clone(),
    }
}

/// What task `t`'s last verification showed, test by test; `None` before any
/// verification (or in a run that judges by exit codes alone).
pub fn task_evidence(s: &RunState, t: &TaskState) -> Option<TaskEvidence> {
    if !s.settings.evidence {
        return None;
    }
    let Some(e) = &t.evidence else {
        // Verified without a report: its exit codes decided.
        let verified_by_exit = t.status == TaskStatus::Done
            && !t.checked.is_empty()
            && !t.checked.iter().any(|c| c.measured.is_some());
        return verified_by_exit.then(|| TaskEvidence {
            named: 0,
            named_passing: 0,
            tests: Vec::new(),
            regressions: Vec::new(),
            dropped: Vec::new(),
            flaky: Vec::new(),
            unmatched: Vec::new(),
            exit_code_only: true,
        });
    };
    let at = t.evidence_at;
    let collected = std::cell::OnceCell::new();
    let row = |x: &Seen| row(s, &collected, x, at);
    let (named_passing, named) = e.named_passing();
    Some(TaskEvidence {
        named,
        named_passing,
        tests: e.named.iter().map(row).collect(),
        regressions: e.regressions.iter().map(row).collect(),
        dropped: e.dropped.iter().map(row).collect(),
        flaky: e.flaky.clone(),
        unmatched: e.unmatched.clone(),
        exit_code_only: false,
    })
}
