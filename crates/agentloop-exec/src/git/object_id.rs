//! A blob's id as git gives it, computed in this process: the content checks that ran
//! one `git hash-object` per file (a process each, ten milliseconds here) hash here
//! instead. A repository's ids are SHA-1 (40 hex digits) or SHA-256 (64); the id being
//! checked says which. SHA-1 is computed with collision detection, as git's own
//! (sha1dc) does: content built to collide is no blob's content here, as git refuses it.

use sha1_checked::{CollisionResult, Digest as _};
use sha2::Sha256;

/// Whether `bytes` is the content of the blob `id` names (git's `hash-object
/// --no-filters`: the bytes as they are, no clean filter or line endings applied).
/// An id that is neither a SHA-1 nor a SHA-256 in lowercase hex names no content.
pub fn blob_holds(id: &str, bytes: &[u8]) -> bool {
    if !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return false;
    }
    let header = format!("blob {}\0", bytes.len());
    match id.len() {
        40 => {
            let mut h = sha1_checked::Sha1::new();
            h.update(header.as_bytes());
            h.update(bytes);
            match h.try_finalize() {
                CollisionResult::Ok(sum) => hex(&sum) == id,
                _ => false,
            }
        }
        64 => {
            let mut h = Sha256::new();
            h.update(header.as_bytes());
            h.update(bytes);
            hex(&h.finalize()) == id
        }
        _ => false,
    }
}

fn hex(sum: &[u8]) -> String {
    use std::fmt::Write as _;
    sum.iter()
        .fold(String::with_capacity(sum.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::blob_holds;
    use std::process::Command;

    /// The ids git itself gives `contents` in a repository of `format`.
    fn git_ids(format: &str, contents: &[Vec<u8>]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("git")
            .args(["init", "-q", &format!("--object-format={format}")])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(ok.success());
        let mut names = Vec::new();
        for (i, bytes) in contents.iter().enumerate() {
            std::fs::write(dir.path().join(i.to_string()), bytes).unwrap();
            names.push(i.to_string());
        }
        let out = Command::new("git")
            .args(["hash-object", "--no-filters", "--"])
            .args(&names)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Empty, text, CRLF, binary, larger than any buffer, and every length around the
    /// hash's 64-byte blocks (the header shifts the content across their edges).
    #[test]
    fn content_is_its_id_as_git_hashes_it_in_either_object_format() {
        let mut contents: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"x\n".to_vec(),
            b"line\r\nother\r\n".to_vec(),
            b"\0\xff\xfe binary".to_vec(),
            (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ];
        contents.extend((50..140).map(|n| vec![b'a'; n]));
        for format in ["sha1", "sha256"] {
            let ids = git_ids(format, &contents);
            assert_eq!(ids.len(), contents.len());
            for (id, bytes) in ids.iter().zip(&contents) {
                assert!(
                    blob_holds(id, bytes),
                    "{format}: {id}, {} bytes",
                    bytes.len()
                );
                let mut other = bytes.clone();
                other.push(b'!');
                assert!(!blob_holds(id, &other), "{format}: one byte more");
                assert!(!blob_holds(&id.to_uppercase(), bytes), "uppercase is no id");
                assert!(!blob_holds(&id[..id.len() - 1], bytes), "a short id");
            }
        }
        assert!(!blob_holds("", b""));
        assert!(!blob_holds("not an id", b""));
    }
}
