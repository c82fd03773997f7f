//! How a check runs and what it may see: the verification surface (the files that
//! decide the checks) and its baseline (`surface`), the clean copy of the tree the
//! checks run in (`clean_copy`), and the verification runner itself, with its
//! baseline of the tests and held-out checks (`verify`).

pub mod clean_copy;
pub mod surface;
pub mod verify;
