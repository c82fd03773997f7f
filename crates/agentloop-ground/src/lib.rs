//! The ground every other agentloop crate stands on: value types that configuration,
//! settings and journal all carry (`values`), words for messages (`words`), path
//! patterns (`paths`), the clock, what a failure looks like (`failure`), atomic file
//! writes (`fsutil`), secrets kept out of what is written (`redact`), and what an agent
//! says: the signals of its final message (`signals`) and its MCP reports (`reports`);
//! whether a terminal's input has keys or is gone (`tty`).
//! Nothing here knows a plan, a run or a process.

pub mod clock;
pub mod failure;
pub mod fsutil;
pub mod paths;
pub mod redact;
pub mod reports;
pub mod signals;
pub mod tty;
pub mod values;
pub mod words;
