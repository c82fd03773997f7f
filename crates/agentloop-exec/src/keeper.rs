//! The keeper: in a run with workers, each agent runs under a small process of its
//! own (agentloop's binary, started as `agentloop __agentloop_keep -- PROGRAM …`)
//! that is a child subreaper. Whatever the agent starts and leaves behind — in a new
//! session, through a double fork, with agentloop's variables taken out of its
//! environment — comes back to its keeper, not to the driver where several agents'
//! leftovers mix; when the agent ends, the keeper ends all of them, then itself. So
//! nothing an agent started outlives its iteration, found by the process tree rather
//! than by a marker the agent could remove.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// The first argument that makes agentloop's binary a keeper.
pub const KEEP_ARG: &str = "__agentloop_keep";

static KEEPER: OnceLock<PathBuf> = OnceLock::new();

/// From now on, supervised programs that belong to an owner (agents) run under a
/// keeper: `program` (agentloop's own binary, which answers [`KEEP_ARG`]).
pub fn use_keeper(program: PathBuf) {
    let _ = KEEPER.set(program);
}

/// The keeper's program, once [`use_keeper`] was called.
pub(super) fn keeper() -> Option<&'static PathBuf> {
    KEEPER.get()
}

/// The signal that asked the keeper to end (0: none yet).
static ASKED: AtomicI32 = AtomicI32::new(0);
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: nix::libc::c_int) {
    ASKED.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// The keeper's whole life: runs `argv` (after an optional `--`), waits for it, ends
/// everything it left, and ends as it did (its exit code, or the same signal).
pub fn keep(argv: &[OsString]) -> i32 {
    let argv = match argv.first() {
        Some(a) if a == "--" => &argv[1..],
        _ => argv,
    };
    let Some((program, args)) = argv.split_first() else {
        eprintln!("agentloop: {KEEP_ARG} needs a program");
        return 2;
    };
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let on = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only stores to atomics.
        let _ = unsafe { sigaction(sig, &on) };
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => Pid::from_raw(c.id() as i32),
        Err(e) => {
            eprintln!("agentloop: cannot start {}: {e}", program.to_string_lossy());
            return 127;
        }
    };
    let ended = 'wait: loop {
        // The program's end, or a leftover's (reaped as they go).
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => break 'wait Ended::Code(code),
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                    break 'wait Ended::Signal(sig);
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        if STOP.load(Ordering::SeqCst) {
            // Asked to end (the driver ends the whole group): the program got the
            // same signal; it and what it left go now, before the driver's SIGKILL.
            let _ = nix::sys::signal::kill(child, Signal::SIGTERM);
            super::reap::kill_orphans(Duration::from_millis(1500), None);
            let sig = Signal::try_from(ASKED.load(Ordering::SeqCst)).unwrap_or(Signal::SIGTERM);
            break Ended::Signal(sig);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Everything the program started and left behind ends with it.
    super::reap::kill_orphans(Duration::from_secs(2), None);
    match ended {
        Ended::Code(c) => c,
        Ended::Signal(sig) => {
            // Ends by the same signal, so the driver reads the program's end as it was.
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            // SAFETY: restoring the default disposition.
            let _ = unsafe { sigaction(sig, &default) };
            let _ = nix::sys::signal::raise(sig);
            128 + sig as i32
        }
    }
}

enum Ended {
    Code(i32),
    Signal(Signal),
}
