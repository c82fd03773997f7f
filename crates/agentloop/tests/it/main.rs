//! The one integration-test binary: the real `agentloop` binary, real git, real
//! processes and signals.

mod api;
mod bad_input;
mod browser;
mod cli;
mod control;
mod crash;
mod efficiency;
mod gates;
mod hook_agents;
mod hook_mode;
mod hook_session;
mod mcp;
mod plan_new;
mod policy;
mod real_aider;
mod real_claude;
mod real_cli;
mod real_codex;
mod real_copilot;
mod real_gemini;
mod real_opencode;
mod real_trust;
mod reports;
mod requests;
mod resume;
mod ship;
mod ship_task;
mod support;
mod surface;
mod terminals;
mod tracker;
mod tripwire;
mod trust;
mod verdict;
mod workers;
