//! Inside the sandbox's network namespace: `agentloop sandbox-net` listens on that
//! namespace's loopback (the proxy port the agent's `HTTPS_PROXY` names, and each
//! allowed loopback port), carries every connection to the host's proxy over the Unix
//! socket bound into the sandbox, and runs the agent's command as its child.

use std::ffi::OsString;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

/// What the bridge is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    pub socket: PathBuf,
    pub proxy_port: u16,
    pub forwards: Vec<u16>,
    pub command: Vec<OsString>,
}

impl Bridge {
    /// Listens, runs the command and returns its exit code (128 + the signal that
    /// ended it); 125 when the bridge itself cannot start.
    pub fn run(&self) -> i32 {
        let Some((program, args)) = self.command.split_first() else {
            eprintln!("agentloop sandbox-net: no command to run");
            return 125;
        };
        let mut listeners = vec![(self.proxy_port, None)];
        listeners.extend(self.forwards.iter().map(|p| (*p, Some(*p))));
        for (port, forward) in listeners {
            let l = match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("agentloop sandbox-net: cannot listen on 127.0.0.1:{port}: {e}");
                    return 125;
                }
            };
            let socket = self.socket.clone();
            std::thread::spawn(move || accept(l, &socket, forward));
        }
        match std::process::Command::new(program).args(args).status() {
            Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
            Err(e) => {
                eprintln!(
                    "agentloop sandbox-net: cannot run {}: {e}",
                    program.to_string_lossy()
                );
                if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                }
            }
        }
    }
}

fn accept(listener: TcpListener, socket: &Path, forward: Option<u16>) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let socket = socket.to_path_buf();
        std::thread::spawn(move || {
            let Ok(mut host) = UnixStream::connect(&socket) else {
                return;
            };
            let first = match forward {
                Some(port) => format!("F 127.0.0.1:{port}\n"),
                None => "P\n".to_string(),
            };
            if host.write_all(first.as_bytes()).is_ok() {
                let _ = super::net::splice::<TcpStream, UnixStream>(conn, host, &[]);
            }
        });
    }
}
