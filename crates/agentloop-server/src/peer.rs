//! The process at the other end of a loopback connection, so a control request the
//! agent makes over HTTP (with the token it can read as the same user) is known as
//! the agent's own and refused like one from the CLI.

use std::net::{IpAddr, SocketAddr};

/// The pid, among `candidates`, of the process that holds the client end of a
/// connection from `client`, when it is on this machine (Linux, `/proc`). Only the
/// candidates' open sockets are looked at, and the kernel's socket table only when
/// one of them has any, so this costs little when they are few.
pub(crate) fn client_among(client: SocketAddr, candidates: &[u32]) -> Option<u32> {
    if candidates.is_empty() || !client.ip().is_loopback() {
        return None;
    }
    // socket inode → the candidate holding it.
    let mut sockets: Vec<(String, u32)> = Vec::new();
    for &pid in candidates {
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(link) = std::fs::read_link(fd.path())
                && let Some(inode) = link
                    .to_str()
                    .and_then(|l| l.strip_prefix("socket:["))
                    .and_then(|l| l.strip_suffix(']'))
            {
                sockets.push((inode.to_string(), pid));
            }
        }
    }
    if sockets.is_empty() {
        return None;
    }
    let (table, want) = match client.ip() {
        IpAddr::V4(ip) => (
            "/proc/net/tcp",
            format!("{:08X}", u32::from_ne_bytes(ip.octets())),
        ),
        IpAddr::V6(ip) => (
            "/proc/net/tcp6",
            ip.octets()
                .chunks(4)
                .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
    };
    let want = format!("{want}:{:04X}", client.port());
    let text = std::fs::read_to_string(table).ok()?;
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    let inode = text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&want.as_str())).then(|| f.get(9).map(|s| s.to_string()))?
    })?;
    sockets
        .into_iter()
        .find(|(i, _)| *i == inode)
        .map(|(_, pid)| pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_end_of_a_loopback_connection_is_this_process() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let (_conn, from) = server.accept().unwrap();
        assert_eq!(from, client.local_addr().unwrap());
        let me = std::process::id();
        assert_eq!(client_among(from, &[1, me]), Some(me));
        assert_eq!(client_among(from, &[1]), None);
    }
}
