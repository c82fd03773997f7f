//! Effects on the machine: supervised processes (`supervise`), the verification runner
//! (`verify`) and what git says about the work tree (`git`).

pub mod git;
pub mod supervise;
pub mod verify;
