//! The `agentloop` command line: argument parsing, rendering and the driver loop. The
//! decisions live in the library crates below it (`agentloop-policy`, `agentloop-evidence`, …).

// First: its `outln!` macro is used by the modules below.
#[macro_use]
mod render;
mod cli;
mod cluster;
pub(crate) mod commands;
mod describe;
mod driver;
mod error;
mod notify;
pub mod reference;

pub use commands::watch::frame_text as watch_frame;
pub use error::{CliError, ExitKind};

use clap::Parser;

/// Runs the command line and returns the process exit code.
pub fn main() -> u8 {
    // A keeper of an agent in a run with workers (see `exec::keeper`): not a command
    // a person types.
    // agentloop's own git filters Git LFS's files with this binary.
    if let Ok(me) = std::env::current_exe() {
        agentloop_exec::git::lfs::use_filter(me);
    }
    let mut args = std::env::args_os();
    match args.nth(1) {
        // Git LFS's filter, as agentloop's own git runs it (see `exec::git::lfs`).
        Some(a) if a == agentloop_exec::git::lfs::FILTER_ARG => {
            let rest: Vec<std::ffi::OsString> = args.collect();
            return agentloop_exec::git::lfs::filter(&rest).clamp(0, 255) as u8;
        }
        Some(a) if a == agentloop_exec::keeper::KEEP_ARG => {
            let rest: Vec<std::ffi::OsString> = args.collect();
            return agentloop_exec::keeper::keep(&rest).clamp(0, 255) as u8;
        }
        // A hook-mode run's resident (see `exec::resident`), started by a Stop hook.
        Some(a) if a == agentloop_resident::RESIDENT_ARG => {
            let (Some(run), Some(root)) = (args.next(), args.next()) else {
                return ExitKind::BadInput as u8;
            };
            let served = agentloop_resident::serve(run.as_ref(), root.as_ref());
            return u8::from(served.is_err());
        }
        // Inside an agent's sandbox: its network carried to agentloop's proxy.
        Some(a) if a == "sandbox-net" => {
            use clap::Parser;
            let a = match cli::SandboxNetArgs::try_parse_from(std::env::args_os().skip(1)) {
                Ok(a) => a,
                Err(e) => {
                    let _ = e.print();
                    return ExitKind::BadInput as u8;
                }
            };
            let bridge = agentloop_exec::sandbox::Bridge {
                socket: a.socket,
                proxy_port: a.proxy_port,
                forwards: a.forward,
                command: a.command,
            };
            return bridge.run().clamp(0, 255) as u8;
        }
        // On a cluster node: one iteration as a job (its spec on standard input).
        Some(a) if a == "job" && args.next().is_none() => {
            return match cluster::job::job() {
                Ok(()) => ExitKind::Completed as u8,
                Err(e) => {
                    render::error(&e);
                    e.exit_kind() as u8
                }
            };
        }
        _ => {}
    }
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitKind::BadInput as u8
            } else {
                0
            };
            let _ = e.print();
            return code;
        }
    };
    match commands::dispatch(cli) {
        Ok(kind) => kind as u8,
        Err(e) => {
            if !e.message.is_empty() {
                render::error(&e);
            }
            e.exit_kind() as u8
        }
    }
}
