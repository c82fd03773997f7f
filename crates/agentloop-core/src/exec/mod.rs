//! Effects on the machine: supervised processes (`supervise`), the verification runner
//! (`verify`), what agents leave behind (`reap`), what git says about the work tree
//! (`git`), the verification surface and its baseline (`surface`) and the clean copy
//! checks run in (`clean_copy`), the work tree watched between snapshots (`watch`), what a run needs from the machine (`prereq`), and a work tree carried through a git remote to a job elsewhere and back (`transport`).

pub mod clean_copy;
pub mod git;
pub mod keeper;
pub mod mounts;
pub mod prereq;
pub mod reap;
pub mod resident;
pub mod sandbox;
pub mod stale_locks;
pub mod supervise;
pub mod surface;
pub mod trace;
pub mod transport;
pub mod verify;
pub mod watch;
pub mod worktree;
