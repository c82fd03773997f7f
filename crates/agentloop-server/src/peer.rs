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
    let inodes = inodes_at(&text, &want);
    sockets
        .into_iter()
        .find(|(i, _)| inodes.contains(&i.as_str()))
        .map(|(_, pid)| pid)
}

/// The inodes of the sockets whose local end is `local` in a kernel socket table
/// (`sl local_address rem_address st … inode`). A socket in TIME_WAIT from an
/// earlier connection can hold the same local address with inode 0; a client may
/// also share its port with another of its connections: every live one is named.
fn inodes_at<'t>(table: &'t str, local: &str) -> Vec<&'t str> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&local))
                .then(|| f.get(9).copied())
                .flatten()
        })
        .filter(|&inode| inode != "0")
        .collect()
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

    #[test]
    fn an_old_connection_on_the_same_port_does_not_hide_the_live_one() {
        // A TIME_WAIT socket (inode 0) on the client's address, listed first, as the
        // kernel does when an ephemeral port is reused for another destination.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3 0000000000000000\n\
   1: 0100007F:9C40 0100007F:2328 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 20 4 30 10 -1\n\
   2: 0100007F:2328 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1\n";
        assert_eq!(inodes_at(table, "0100007F:9C40"), ["4242"]);
        assert_eq!(inodes_at(table, "0100007F:1F90"), Vec::<&str>::new());
    }
}
