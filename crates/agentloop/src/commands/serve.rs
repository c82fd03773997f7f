//! `agentloop serve`: the control API on loopback, behind a token.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use agentloop_workspace::Workspace;

use crate::cli::ServeArgs;
use crate::error::{CliError, ExitKind};

/// The token file: `$XDG_STATE_HOME/agentloop/token`, readable by the user only.
fn token_path() -> Option<PathBuf> {
    agentloop_workspace::registry_path().map(|p| p.with_file_name("token"))
}

/// The stored token, or a new one (returned with `true`).
fn token() -> Result<(String, bool, PathBuf), CliError> {
    let path = token_path()
        .ok_or_else(|| CliError::internal("no state directory (set HOME or XDG_STATE_HOME)"))?;
    if let Ok(t) = std::fs::read_to_string(&path)
        && t.trim().len() >= 32
    {
        return Ok((t.trim().to_string(), false, path));
    }
    let mut raw = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(token.as_bytes())?;
    f.sync_all()?;
    Ok((token, true, path))
}

pub fn serve(cwd: &Path, args: ServeArgs) -> Result<ExitKind, CliError> {
    let ip: std::net::IpAddr = args
        .bind
        .parse()
        .map_err(|_| CliError::user(format!("--bind {}: not an IP address", args.bind)))?;
    if !ip.is_loopback() {
        crate::render::warn(&format!(
            "listening on {ip}, not loopback: put TLS in front of it; the token travels in every request"
        ));
    }
    let (token, new, path) = token()?;
    // Runs of the current project are served even when the registry misses them.
    let ws = Workspace::find(cwd);
    // With a shared store, its runs too, copied here as they grow.
    super::store::copy_runs(&ws)?;
    let local = ws
        .run_ids()
        .into_iter()
        .filter_map(|id| ws.resolve(Some(&id)).ok())
        .collect();
    let exe = std::env::current_exe()?;
    let server = agentloop_server::Server::new(token.clone(), local)
        .with_starter(exe, vec![ws.root.clone()]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((ip, args.port))
            .await
            .map_err(|e| CliError::user(format!("cannot listen on {ip}:{}: {e}", args.port)))?;
        let addr = listener.local_addr()?;
        eprintln!("agentloop serve: listening on http://{addr}");
        if new {
            eprintln!("  open the dashboard: http://{addr}/?token={token}");
            eprintln!(
                "  the token is stored in {} (user-only); it is printed this once",
                path.display()
            );
        } else {
            eprintln!(
                "  dashboard: http://{addr}/ (it asks for the token in {})",
                path.display()
            );
        }
        // The client's address lets a control request be traced to its process.
        axum::serve(
            listener,
            server
                .router()
                .into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .map_err(|e| CliError::internal(e.to_string()))
    })?;
    Ok(ExitKind::Completed)
}
