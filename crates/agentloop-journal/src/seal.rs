//! Journal records are sealed with an HMAC under a key that lives outside every
//! repository (`$XDG_STATE_HOME/agentloop/journal.key`, readable by its owner only), so
//! a line appended or edited by anything but agentloop — an agent that learnt the line
//! format, a script — does not verify: it is reported and never acted on.
//!
//! Without a sandbox an agent runs with its user's rights and could read the key; this
//! stops accidental and casual forgery, not a determined agent (see docs/SECURITY.md).

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Bytes of the HMAC-SHA256 kept in each line (hex doubles it).
const MAC_BYTES: usize = 16;

/// The key file: `$XDG_STATE_HOME/agentloop/journal.key` (`~/.local/state/…`).
pub fn key_path() -> Option<PathBuf> {
    agentloop_ground::fsutil::state_dir().map(|d| d.join("journal.key"))
}

/// Set by a process that only shows a run to its agent and cannot read the key (the
/// MCP server inside a sandbox, where the state directory is hidden): its reads take
/// every line as sealed. Such a process appends nothing.
static UNSEALED_READS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This process reads journals without checking their seals, when it cannot read the
/// key; see [`UNSEALED_READS`]. Returns whether it does.
pub fn read_unsealed_without_key() -> bool {
    let readable = key_path().is_some_and(|p| read_key(&p).is_ok_and(|k| k.len() >= 32));
    if !readable {
        UNSEALED_READS.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    !readable
}

/// The key, read once per process; created (32 random bytes, mode 0600) the first
/// time. `None` when there is no state directory or it cannot be written.
fn key() -> Option<&'static [u8]> {
    static KEY: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    KEY.get_or_init(|| load_or_create().ok()).as_deref()
}

/// The key file's bytes (a FIFO or a device there is refused, not waited on).
fn read_key(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    agentloop_ground::fsutil::read_regular(path, 4096)
}

fn load_or_create() -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = key_path().ok_or_else(|| std::io::Error::other("no state directory"))?;
    if let Ok(k) = read_key(&path)
        && k.len() >= 32
    {
        return Ok(k);
    }
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut key = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))?;
    // Two processes may race to create it: the first one wins, the other reads it.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut f) => {
            f.write_all(&key)?;
            f.sync_all()?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path),
        Err(e) => Err(e),
    }
}

/// The HMAC keyed once per process: each line's seal starts from a copy of it rather
/// than hashing the key again (reading a long journal seals every line).
fn keyed() -> Option<Hmac<Sha256>> {
    static MAC: OnceLock<Option<Hmac<Sha256>>> = OnceLock::new();
    MAC.get_or_init(|| Hmac::<Sha256>::new_from_slice(key()?).ok())
        .clone()
}

/// The seal of a line's bytes, as lowercase hex; `None` without a key.
pub fn seal(bytes: &[u8]) -> Option<String> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut mac = keyed()?;
    mac.update(bytes);
    let out = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(MAC_BYTES * 2);
    for &b in &out[..MAC_BYTES] {
        hex.push(HEX[usize::from(b >> 4)] as char);
        hex.push(HEX[usize::from(b & 0xf)] as char);
    }
    Some(hex)
}

/// Whether `hex` is the seal of `bytes` under this machine's key (compared in
/// constant time).
pub fn verifies(bytes: &[u8], hex: &str) -> bool {
    if UNSEALED_READS.load(std::sync::atomic::Ordering::SeqCst) {
        return true;
    }
    let Some(given) = unhex(hex) else {
        return false;
    };
    let Some(mut mac) = keyed() else {
        return false;
    };
    mac.update(bytes);
    mac.verify_truncated_left(&given).is_ok()
}

/// A seal's bytes from its hex (either case), `None` unless it is one.
fn unhex(hex: &str) -> Option<[u8; MAC_BYTES]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let hex = hex.as_bytes();
    if hex.len() != MAC_BYTES * 2 {
        return None;
    }
    let mut out = [0u8; MAC_BYTES];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_verifies_its_bytes_only() {
        let s = seal(b"a line").expect("a key in the test's state directory");
        assert_eq!(s.len(), MAC_BYTES * 2);
        assert!(
            s.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(verifies(b"a line", &s));
        assert!(verifies(b"a line", &s.to_uppercase()));
        assert!(!verifies(b"a line!", &s));
        assert!(!verifies(b"a line", &s[..s.len() - 2]));
        assert!(!verifies(b"a line", &format!("{s}00")));
        let mut flipped = s.clone().into_bytes();
        flipped[0] = if flipped[0] == b'0' { b'1' } else { b'0' };
        assert!(!verifies(b"a line", &String::from_utf8(flipped).unwrap()));
        assert!(!verifies(b"a line", &format!("+{}", &s[1..])));
        assert!(!verifies(b"a line", &"zz".repeat(MAC_BYTES)));
    }
}
