//! Effects on the machine: supervised processes (`supervise`), what agents leave behind
//! (`reap`), what git says about the work tree (`git`) and git's worktrees
//! (`worktree`), the work tree watched between snapshots (`watch`), the sandbox agents
//! and checks run in (`sandbox`), what a check read (`trace`), what a run needs from
//! the machine (`prereq`), and a work tree carried through a git remote to a job
//! elsewhere and back (`transport`). The verification surface, the clean copy and the
//! checks run in it stand on this in `agentloop-verify`.

pub mod git;
pub mod index_mark;
pub mod keeper;
pub mod mounts;
pub mod prereq;
pub mod reap;
pub mod sandbox;
pub mod stale_locks;
pub mod supervise;
pub mod trace;
pub mod transport;
pub mod watch;
pub mod worktree;

#[doc(hidden)]
pub mod testing;
