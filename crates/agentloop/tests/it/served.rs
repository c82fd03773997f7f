//! Bare repositories served over `git://` on 127.0.0.1, for executors whose jobs reach
//! no path of the driver's disk.

use std::process::Command;
use std::time::Duration;

/// A directory of bare repositories served by `git daemon` on 127.0.0.1, pushes
/// allowed; the daemon ends with it.
pub struct Served {
    dir: tempfile::TempDir,
    daemon: std::process::Child,
    port: u16,
}

impl Served {
    pub fn start(dir: tempfile::TempDir) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let daemon = Command::new("git")
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", dir.path().display()),
            ])
            .arg(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "git daemon did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Served { dir, daemon, port }
    }

    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
