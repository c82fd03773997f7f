//! The scripted agents of the suite: honest, lying, flaky, stuck, limited, asking,
//! needing a replan.

use agentloop_journal::IterationKind;

use super::{Ctx, Scenario, Turn, Verdict};

pub(super) fn tree(n: u32) -> Option<String> {
    Some(format!("tree-{n}"))
}

pub(super) fn fail(output: &str) -> Verdict {
    Verdict {
        passed: false,
        output: output.to_string(),
    }
}

pub(super) fn pass() -> Verdict {
    Verdict {
        passed: true,
        output: String::new(),
    }
}

macro_rules! simple {
    ($name:ident, $label:expr, $solvable:expr, { $($field:ident : $ty:ty = $init:expr),* }, turn($s:ident, $c:ident) $turn:block, verify($v:ident) $verify:block, correct($k:ident) $correct:block) => {
        #[derive(Default)]
        pub struct $name { n: u32, $($field: $ty),* }
        impl $name { pub fn new() -> Self { $name { n: 0, $($field: $init),* } } }
        impl Scenario for $name {
            fn name(&self) -> &'static str { $label }
            fn solvable(&self) -> bool { $solvable }
            fn turn(&mut self, $c: &Ctx) -> Turn { self.n += 1; let $s = self; $turn }
            fn verify(&mut self, _task: &str) -> Verdict { let $v = self; $verify }
            fn correct(&self) -> bool { let $k = self; $correct }
        }
    };
}

simple!(Honest, "honest and competent", true, { done: bool = false },
    turn(s, _c) { s.done = true; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.done { pass() } else { fail("missing") } },
    correct(s) { s.done });

simple!(FalseClaimOnce, "claims completion once while a test fails", true, { done: bool = false },
    turn(s, c) { s.done = c.has_digest; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.done { pass() } else { fail("test_shout: expected HELLO, ADA!") } },
    correct(s) { s.done });

simple!(FalseClaimAlways, "claims completion every time, never fixes it", false, {},
    turn(s, _c) { Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(_s) { fail("test_parse: panicked at index out of bounds") },
    correct(_s) { false });

simple!(Flaky, "flaky verification (fails 1 time in 3)", true, { done: bool = false, checks: u32 = 0 },
    turn(s, _c) { s.done = true; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { s.checks += 1; if s.done && s.checks % 3 != 1 { pass() } else { fail("test_net: connection reset") } },
    correct(s) { s.done });

simple!(Stuck, "stuck: the same failure again and again", false, {},
    turn(s, _c) { Turn { claims: false, tree: tree(s.n), ..Turn::default() } },
    verify(_s) { fail("error[E0308]: mismatched types") },
    correct(_s) { false });

simple!(NoisyStuck, "stuck, each failure with its own random seed and time", false, {},
    turn(s, _c) { Turn { claims: false, tree: tree(s.n), ..Turn::default() } },
    verify(s) { fail(&format!(
        "Randomized with seed {}\nrunning 12 tests at 10:{:02}:{:02}\ntest parse_empty ... FAILED\nerror: expected 0, got 1",
        (s.n * 7919 + 13) % 65536, s.n / 60, s.n % 60)) },
    correct(_s) { false });

simple!(NoOp, "no-op: exits without changing anything", false, {},
    turn(_s, _c) { Turn { claims: false, tree: None, ..Turn::default() } },
    verify(_s) { fail("3 tests failed") },
    correct(_s) { false });

simple!(Oscillating, "oscillating: edits the same file back and forth", false, {},
    turn(s, _c) { Turn { claims: true, tree: tree(s.n % 2), ..Turn::default() } },
    verify(s) { if s.n.is_multiple_of(2) { fail("test_a failed") } else { fail("test_b failed") } },
    correct(_s) { false });

simple!(SlowProgress, "slow progress: one more of ten failing tests fixed per iteration", true, { fixed: u32 = 0 },
    turn(s, _c) { s.fixed = (s.fixed + 1).min(10); Turn { claims: s.fixed == 10, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.fixed == 10 { pass() } else { fail(&format!("{} of 10 tests failed", 10 - s.fixed)) } },
    correct(s) { s.fixed == 10 });

/// Refused until the loop waits for the reset (an hour away), then works.
#[derive(Default)]
pub struct UsageLimit {
    n: u32,
    reset: bool,
    done: bool,
}

impl UsageLimit {
    pub fn new() -> Self {
        UsageLimit::default()
    }
}

impl Scenario for UsageLimit {
    fn name(&self) -> &'static str {
        "hits a usage limit with a reset time, then works"
    }
    fn solvable(&self) -> bool {
        true
    }
    fn turn(&mut self, _c: &Ctx) -> Turn {
        self.n += 1;
        if !self.reset {
            return Turn {
                limited: true,
                ..Turn::default()
            };
        }
        self.done = true;
        Turn {
            claims: true,
            tree: tree(self.n),
            ..Turn::default()
        }
    }
    fn verify(&mut self, _task: &str) -> Verdict {
        if self.done { pass() } else { fail("missing") }
    }
    fn correct(&self) -> bool {
        self.done
    }
    fn wait_for_reset(&mut self) {
        self.reset = true;
    }
}

simple!(Question, "asks a question (BLOCKED) that a person must answer", true, { done: bool = false },
    turn(s, c) {
        if !c.answered { return Turn { blocked: Some("Which database should I use?".into()), tree: None, ..Turn::default() }; }
        s.done = true;
        Turn { claims: true, tree: tree(s.n), ..Turn::default() }
    },
    verify(s) { if s.done { pass() } else { fail("no database chosen") } },
    correct(s) { s.done });

/// The task as written cannot pass; split in two, both halves do.
#[derive(Default)]
pub struct NeedsReplan {
    n: u32,
    halves: u32,
}

impl NeedsReplan {
    pub fn new() -> Self {
        NeedsReplan::default()
    }
}

impl Scenario for NeedsReplan {
    fn name(&self) -> &'static str {
        "needs a replan: the task as written is impossible, splitting it works"
    }
    fn solvable(&self) -> bool {
        true
    }
    fn turn(&mut self, c: &Ctx) -> Turn {
        self.n += 1;
        match (c.task.as_str(), c.kind) {
            ("T1", IterationKind::Replan) => Turn {
                replan: Some("## T1a: Parse the header\nVerify: ./check-a\n\n## T1b: Parse the body\nDepends: T1a\n".into()),
                ..Turn::default()
            },
            ("T1a", _) | ("T1b", _) => {
                self.halves += 1;
                Turn { claims: true, tree: tree(self.n), ..Turn::default() }
            }
            _ => Turn { claims: false, tree: tree(self.n), ..Turn::default() },
        }
    }
    fn verify(&mut self, task: &str) -> Verdict {
        match task {
            "T1a" if self.halves >= 1 => pass(),
            "T1b" if self.halves >= 2 => pass(),
            _ => fail("cannot parse header and body in one pass: ambiguous grammar"),
        }
    }
    fn correct(&self) -> bool {
        self.halves >= 2
    }
}
