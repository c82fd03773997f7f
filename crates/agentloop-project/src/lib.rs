//! The project model: what each file of a project is to its checks — the plan, a
//! test, the harness that configures or runs the checks, or the work — what a check's
//! environment takes from the user's tree, and which checks the project declares for
//! itself. The verification surface, the clean copy, the verifier's trace and `init`
//! all ask it here, through [`Project`] and the functions beside it.
//!
//! What it knows it knows from the checks' own words (`commands`), the scripts and
//! Makefiles they run read word by word (`harness`), what the runners collected at the
//! test baseline (`collected`), the test sections of files that only partly configure
//! the checks (`sections`), the files that declare a project's checks (`detect`),
//! `[verify] carry` (`environment`) and, as the fallback, the usual layouts (`names`).
//! Each answer says what it was found from. `admit` says which of the files an agent
//! added reach the judge.

pub mod admit;
pub mod agent_files;
pub mod collected;
mod commands;
mod detect;
mod environment;
pub mod follow;
pub mod harness;
pub mod hermetic;
pub mod installed;
pub mod learned;
mod model;
mod names;
mod sections;
pub mod shadow;

pub use admit::{Admission, Allowed};
pub use commands::CheckWords;
pub use detect::{Check, Detected, Skipped, detect, detect_with};
pub use environment::{carried, did_not_start, links_into_project, python_first, uncarried};
pub use model::{Project, TEST_BY_NAME};
pub use names::{
    CHECK_FILES, glob_name, in_source_dir, is_git_file, is_script_name, is_sectioned, is_test_file,
    is_test_path, runs_a_shell,
};
pub use sections::{GIT_CONFIG, check_section};
