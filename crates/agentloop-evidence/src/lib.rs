//! Per-test evidence: what a test runner's own report says of each test, the run's
//! baseline of it, and the verdict read from both — a task is done when the tests it
//! names went from failing to passed (FAIL_TO_PASS) and every test that passed at the
//! baseline still passes (PASS_TO_PASS), the way SWE-bench judges a patch.
//!
//! - [`runner`]: which runner a `Verify:` command starts, and the arguments that make
//!   it write a report where agentloop chose (outside the copy the check runs in);
//! - [`junit`], [`json`], [`gotest`], [`libtest`], [`tap`]: the reports, read into [`TestResult`]s;
//! - [`names`]: the tests a task names (`Tests:`), matched against reported ids;
//! - [`judge`]: a command's report against the baseline and the names (pure).
//!
//! Nothing here knows the journal: the records that carry these types import them.

pub mod baseline;
pub mod coverage;
pub mod gotest;
pub mod json;
pub mod judge;
pub mod junit;
pub mod learned;
pub mod libtest;
pub mod names;
pub mod pytest_json;
mod read;
mod report;
pub mod runner;
pub mod tap;

pub use baseline::{
    BaselineCommand, Expected, How, LearnedName, Shadowable, TestsBaseline, TracedFile, WouldLoad,
};
pub use judge::{CommandVerdict, Expect, Judged, KnownGood, Seen, judge_command};
pub use learned::{LearnedFile, ProjectModel, Role};
pub use names::TestName;
pub use read::{parse, read};
pub use report::{
    CommandTests, Counts, Format, MAX_REPORT_BYTES, Outcome, PythonNames, Report, ReportError,
    TestResult,
};
pub use runner::{Invocation, ReportAt, Runner};
