//! How many workers a check's runner is told it may use (`[verify] jobs`), and
//! whether pytest's suite is split among pytest-xdist's.

use std::path::PathBuf;
use std::time::Duration;

use agentloop_evidence as evidence;
use agentloop_exec::supervise::{self, Spec};

use super::{Runner, judged_tree_env};

impl Runner<'_> {
    /// What `cmd`'s runner may use (`[verify] jobs`); pytest's workers only where the
    /// split pays ([`worth_splitting`]) and its Python imports pytest-xdist, asked as
    /// the check would run it — in the judged tree, confined as the check is, within
    /// a deadline — once per Python and tree in a process.
    pub(super) fn jobs_of(&self, cmd: &str) -> Option<evidence::runner::Jobs> {
        type Asked = std::collections::HashMap<(PathBuf, PathBuf), bool>;
        static ASKED: std::sync::OnceLock<std::sync::Mutex<Asked>> = std::sync::OnceLock::new();
        let jobs = self.jobs;
        if jobs.n == 0 {
            return None;
        }
        let worth = jobs.said
            || self
                .tests
                .as_ref()
                .and_then(|t| t.expected.baseline.as_deref())
                .and_then(|b| b.commands.iter().find(|c| c.command == cmd))
                .is_some_and(worth_splitting);
        let xdist = jobs.n > 1
            && worth
            && evidence::runner::pytest_python(cmd, self.workdir).is_some_and(|python| {
                let key = (python.clone(), self.workdir.to_path_buf());
                let asked = ASKED.get_or_init(Default::default);
                if let Some(known) = asked.lock().ok().and_then(|a| a.get(&key).copied()) {
                    return known;
                }
                let mut spec = Spec::new(&python, self.workdir).arg("-c").arg(
                    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('xdist') else 1)",
                );
                spec.timeout = Duration::from_secs(20);
                spec.output_cap = 4096;
                spec.grace = Duration::from_secs(1);
                spec.wrap = self.wrap.clone();
                spec.env.extend(judged_tree_env(self.workdir, None));
                let there = supervise::run(spec, || false).is_ok_and(|f| f.success());
                if let Ok(mut a) = asked.lock() {
                    a.insert(key, there);
                }
                there
            });
        Some(evidence::runner::Jobs { n: jobs.n, xdist })
    }
}

/// Whether a pytest check's suite is worth splitting among pytest-xdist's workers
/// when no person said: its run at the baseline took 2 s or more, at 3 ms or more a
/// test. xdist costs about a millisecond a test and a second to start its workers
/// (docs/PERFORMANCE.md): a suite of quicker tests runs as fast in one process.
fn worth_splitting(at_baseline: &evidence::baseline::BaselineCommand) -> bool {
    let Some(ms) = at_baseline.duration_ms else {
        return false;
    };
    let tests = at_baseline.tests.len().max(1) as u64;
    ms >= 2000 && ms / tests >= 3
}
