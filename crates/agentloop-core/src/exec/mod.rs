//! Effects on the machine: supervised processes (`supervise`), the verification runner
//! (`verify`), what agents leave behind (`reap`) and what git says about the work tree
//! (`git`).

pub mod git;
pub mod reap;
pub mod supervise;
pub mod verify;
