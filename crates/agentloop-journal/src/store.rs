//! The append-only journal: one JSON object per line,
//! `{"v":1,"seq":N,"time":"…","kind":"…","data":{…},"sum":"crc32","mac":"…"}`.
//!
//! The checksum covers every byte of the line before `,"sum":` and tells a damaged line
//! from a whole one; the seal (`mac`, see `seal`) covers every byte before `,"mac":` and
//! tells a line agentloop wrote from one anything else wrote. An unsealed line is
//! reported and skipped: it is never folded, whatever it says. A line is appended and
//! fsynced before the action it records is taken. Appends from several processes (the
//! driver, control commands) take an exclusive lock on the journal file itself, so no
//! request is ever lost. A torn last line (a write cut short by a crash) is reported and
//! dropped; a bad line anywhere else is an error naming the line.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::event::{Event, Forged};

/// The journal schema this build writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;
/// Longest journal line accepted when reading.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const SUM_TAG: &[u8] = b",\"sum\":\"";
const MAC_TAG: &[u8] = b",\"mac\":\"";

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: u64,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    pub event: Event,
}

impl Record {
    pub fn time_ms(&self) -> u64 {
        humantime::parse_rfc3339(&self.time)
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "{path}:{line}: schema version {version} is newer than this agentloop understands ({SCHEMA_VERSION})"
    )]
    UnknownVersion {
        path: PathBuf,
        line: usize,
        version: u64,
    },
    #[error("{path}: the journal is empty")]
    Empty { path: PathBuf },
    #[error(
        "{path}:1: the run's first record is not sealed with this machine's key ({key}): the journal was written elsewhere, or replaced"
    )]
    Unsealed { path: PathBuf, key: String },
    #[error("{path}: the journal's store ({store}): {message}")]
    Store {
        path: PathBuf,
        store: String,
        message: String,
    },
}

impl JournalError {
    pub(super) fn io(path: &Path, source: std::io::Error) -> Self {
        JournalError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub struct Contents {
    pub records: Vec<Record>,
    /// Bytes of valid lines; a torn tail starts here.
    pub valid_len: u64,
    /// Length in bytes of a torn last line, if there was one.
    pub torn_tail: Option<u64>,
    /// Lines that are not agentloop's own: skipped.
    pub forged: Vec<Forged>,
}

/// Encodes one journal line (with its newline).
pub fn encode(seq: u64, time: &str, event: &Event) -> Vec<u8> {
    let body = serde_json::to_vec(event).expect("journal events always serialize");
    // body is `{"kind":…,"data":…}`; splice the header in front of its fields.
    let mut line = Vec::with_capacity(body.len() + 80);
    line.extend_from_slice(
        format!("{{\"v\":{SCHEMA_VERSION},\"seq\":{seq},\"time\":\"{time}\",").as_bytes(),
    );
    line.extend_from_slice(&body[1..body.len() - 1]);
    let sum = crc32fast::hash(&line);
    line.extend_from_slice(format!(",\"sum\":\"{sum:08x}\"").as_bytes());
    // Without a key (no state directory) the line is written unsealed, and reading it
    // back says so.
    let mac = crate::seal::seal(&line).unwrap_or_default();
    line.extend_from_slice(format!(",\"mac\":\"{mac}\"}}\n").as_bytes());
    line
}

#[derive(serde::Deserialize)]
struct RawLine {
    v: u64,
    seq: u64,
    time: String,
    #[serde(flatten)]
    event: serde_json::Value,
}

/// A line, read. (One exists at a time, and is consumed at once: no boxing.)
#[allow(clippy::large_enum_variant)]
enum Decoded {
    Sealed(Record),
    /// Not agentloop's: what it claims to be, as far as it can be read.
    Forged {
        seq: u64,
        kind: String,
    },
}

/// Decodes one line (without its newline); `Err` holds a message for the person.
fn decode(path: &Path, line_no: usize, line: &[u8]) -> Result<Decoded, JournalError> {
    let corrupt = |message: String| JournalError::Corrupt {
        path: path.to_path_buf(),
        line: line_no,
        message,
    };
    // The seal is the last field. A line without a valid one is not agentloop's,
    // whatever it says or however it is damaged: it is skipped, never an error.
    let sealed = find_last(line, MAC_TAG).and_then(|m| {
        let mac = line[m + MAC_TAG.len()..].strip_suffix(b"\"}")?;
        let mac = std::str::from_utf8(mac).ok()?;
        crate::seal::verifies(&line[..m], mac).then_some(m)
    });
    let Some(m) = sealed else {
        let raw: Option<serde_json::Value> = serde_json::from_slice(line).ok();
        let seq = raw.as_ref().and_then(|v| v["seq"].as_u64()).unwrap_or(0);
        let kind = raw
            .as_ref()
            .and_then(|v| v["kind"].as_str().map(String::from))
            .unwrap_or_else(|| "unreadable".into());
        return Ok(Decoded::Forged { seq, kind });
    };
    let mut whole = line[..m].to_vec();
    whole.push(b'}');
    let line = &whole[..];
    let at = find_last(line, SUM_TAG).ok_or_else(|| corrupt("no checksum".into()))?;
    let sum_hex = &line[at + SUM_TAG.len()..];
    let sum_hex = sum_hex
        .strip_suffix(b"\"}")
        .ok_or_else(|| corrupt("malformed checksum".into()))?;
    let expected = std::str::from_utf8(sum_hex)
        .ok()
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .ok_or_else(|| corrupt("malformed checksum".into()))?;
    let actual = crc32fast::hash(&line[..at]);
    if actual != expected {
        return Err(corrupt(format!(
            "checksum mismatch (line says {expected:08x}, content is {actual:08x})"
        )));
    }
    if let Some((v, seq, time, rest)) = split_header(&line[..at]) {
        if v > SCHEMA_VERSION as u64 || v == 0 {
            return Err(JournalError::UnknownVersion {
                path: path.to_path_buf(),
                line: line_no,
                version: v,
            });
        }
        // The event is the rest of the object: `"kind":…,"data":…`.
        let mut body = Vec::with_capacity(rest.len() + 2);
        body.push(b'{');
        body.extend_from_slice(rest);
        body.push(b'}');
        let event: Event = serde_json::from_slice(&body)
            .map_err(|e| corrupt(format!("unknown or malformed event: {e}")))?;
        return Ok(Decoded::Sealed(Record {
            seq,
            time: time.to_string(),
            event,
        }));
    }
    // Not in the shape this build writes: read it generically for a precise message.
    let raw: RawLine =
        serde_json::from_slice(line).map_err(|e| corrupt(format!("not a journal event: {e}")))?;
    if raw.v > SCHEMA_VERSION as u64 || raw.v == 0 {
        return Err(JournalError::UnknownVersion {
            path: path.to_path_buf(),
            line: line_no,
            version: raw.v,
        });
    }
    let mut obj = raw.event;
    if let Some(map) = obj.as_object_mut() {
        map.remove("sum");
    }
    let event: Event = serde_json::from_value(obj)
        .map_err(|e| corrupt(format!("unknown or malformed event: {e}")))?;
    Ok(Decoded::Sealed(Record {
        seq: raw.seq,
        time: raw.time,
        event,
    }))
}

/// Splits `{"v":V,"seq":N,"time":"T",REST` (the shape `encode` writes).
fn split_header(b: &[u8]) -> Option<(u64, u64, &str, &[u8])> {
    fn number(b: &[u8], prefix: &[u8]) -> Option<(u64, usize)> {
        let b = b.strip_prefix(prefix)?;
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let n = std::str::from_utf8(&b[..digits]).ok()?.parse().ok()?;
        Some((n, prefix.len() + digits))
    }
    let (v, a) = number(b, b"{\"v\":")?;
    let (seq, c) = number(&b[a..], b",\"seq\":")?;
    let rest = b[a + c..].strip_prefix(b",\"time\":\"")?;
    let end = rest.iter().position(|&ch| ch == b'"')?;
    let time = std::str::from_utf8(&rest[..end]).ok()?;
    let after = rest[end + 1..].strip_prefix(b",")?;
    Some((v, seq, time, after))
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Where a scan of a journal ended.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Bytes of valid lines, counted from the start of the file.
    pub valid_len: u64,
    pub torn_tail: Option<u64>,
    /// Sealed records read.
    pub count: u64,
    /// Lines agentloop did not write as they stand: skipped.
    pub forged: Vec<Forged>,
}

/// Reads and checks a journal from byte `from` (where sequence `first_seq` starts),
/// handing each record to `f` as it goes, so memory stays flat however long it is.
/// Line numbers (of forged lines, of an error) count from the file's start, as
/// `journal verify` says them, wherever the scan began.
pub fn scan(
    path: &Path,
    from: u64,
    first_seq: u64,
    f: impl FnMut(Record),
) -> Result<Scan, JournalError> {
    // The lines before `from` are counted only when a line must be named (rare).
    let before = || lines_before(path, from);
    match scan_from(path, from, first_seq, f) {
        Ok(mut out) => {
            if from > 0 && !out.forged.is_empty() {
                let n = before();
                for f in &mut out.forged {
                    f.line += n;
                }
            }
            Ok(out)
        }
        Err(JournalError::Corrupt {
            path,
            line,
            message,
        }) if from > 0 => Err(JournalError::Corrupt {
            line: line + before(),
            path,
            message,
        }),
        Err(JournalError::UnknownVersion {
            path,
            line,
            version,
        }) if from > 0 => Err(JournalError::UnknownVersion {
            line: line + before(),
            path,
            version,
        }),
        Err(e) => Err(e),
    }
}

/// How many lines end before byte `from` of the file at `path`.
fn lines_before(path: &Path, from: u64) -> usize {
    use std::io::Read;
    let Ok(file) = agentloop_ground::fsutil::open_regular(path) else {
        return 0;
    };
    let mut n = 0;
    let mut buf = vec![0u8; 256 * 1024];
    let mut left = from;
    let mut r = std::io::BufReader::new(file.take(from));
    while left > 0 {
        let Ok(k) = r.read(&mut buf) else { break };
        if k == 0 {
            break;
        }
        n += buf[..k].iter().filter(|b| **b == b'\n').count();
        left -= k as u64;
    }
    n
}

fn scan_from(
    path: &Path,
    from: u64,
    first_seq: u64,
    mut f: impl FnMut(Record),
) -> Result<Scan, JournalError> {
    use std::io::BufRead;
    let mut file =
        agentloop_ground::fsutil::open_regular(path).map_err(|e| JournalError::io(path, e))?;
    file.seek(SeekFrom::Start(from))
        .map_err(|e| JournalError::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
    let mut out = Scan {
        valid_len: from,
        ..Scan::default()
    };
    let mut buf = Vec::new();
    let mut expect_seq = first_seq;
    let mut last_sealed_line = 0usize;
    // Line numbers are exact when reading from the start of the file.
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| JournalError::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            if buf.len() > MAX_LINE_BYTES {
                return Err(JournalError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    message: format!("line is longer than the limit of {MAX_LINE_BYTES} bytes"),
                });
            }
            out.torn_tail = Some(buf.len() as u64);
            break;
        }
        let decoded = decode(path, line_no, &buf[..buf.len() - 1])?;
        out.valid_len += buf.len() as u64;
        let rec = match decoded {
            Decoded::Sealed(rec) => rec,
            Decoded::Forged { .. } if from == 0 && line_no == 1 => {
                return Err(unsealed(path));
            }
            Decoded::Forged { seq, kind } => {
                out.forged.push(Forged {
                    line: line_no,
                    seq,
                    kind,
                });
                continue;
            }
        };
        if rec.seq != expect_seq {
            // A record of agentloop's is missing: edited in place (its line is no longer
            // sealed) or removed.
            let between = out.forged.iter().find(|f| f.line > last_sealed_line);
            let err = match out
                .forged
                .iter()
                .rev()
                .find(|f| f.seq == expect_seq)
                .or(between)
            {
                Some(f) => JournalError::Corrupt {
                    path: path.to_path_buf(),
                    line: f.line,
                    message: format!(
                        "record {expect_seq} was altered: the line is not sealed as agentloop wrote it"
                    ),
                },
                None => JournalError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    message: format!(
                        "sequence number {} where {expect_seq} was expected: a record was removed",
                        rec.seq
                    ),
                },
            };
            return Err(err);
        }
        expect_seq += 1;
        out.count += 1;
        last_sealed_line = line_no;
        f(rec);
    }
    Ok(out)
}

/// The first record only (a run's `run_created`), without reading the rest.
pub fn read_first(path: &Path) -> Result<Record, JournalError> {
    use std::io::BufRead;
    let file =
        agentloop_ground::fsutil::open_regular(path).map_err(|e| JournalError::io(path, e))?;
    let mut line = Vec::new();
    std::io::BufReader::new(file)
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| JournalError::io(path, e))?;
    if line.last() != Some(&b'\n') {
        return Err(JournalError::Empty {
            path: path.to_path_buf(),
        });
    }
    match decode(path, 1, &line[..line.len() - 1])? {
        Decoded::Sealed(rec) => Ok(rec),
        Decoded::Forged { .. } => Err(unsealed(path)),
    }
}

fn unsealed(path: &Path) -> JournalError {
    JournalError::Unsealed {
        path: path.to_path_buf(),
        key: crate::seal::key_path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "no state directory".into()),
    }
}

/// Reads and checks a journal from byte `from` into memory.
pub fn read_from(path: &Path, from: u64, first_seq: u64) -> Result<Contents, JournalError> {
    let mut records = Vec::new();
    let s = scan(path, from, first_seq, |r| records.push(r))?;
    Ok(Contents {
        records,
        valid_len: s.valid_len,
        torn_tail: s.torn_tail,
        forged: s.forged,
    })
}

pub fn read(path: &Path) -> Result<Contents, JournalError> {
    let c = read_from(path, 0, 1)?;
    if c.records.is_empty() {
        return Err(JournalError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::person::Request;
    use crate::writer::Writer;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn ev(n: u32) -> Event {
        Event::Control {
            id: format!("r{n}"),
            source: "test".into(),
            request: Request::Pause,
            by: None,
        }
    }

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let (mut w, first) = Writer::create(&p, &ev(0)).unwrap();
        assert_eq!(first.seq, 1);
        w.append(&ev(1)).unwrap();
        // A second writer's append is seen by the first.
        let mut other = Writer::open(&p, 0, 1).unwrap();
        let got = other.append(&ev(2)).unwrap();
        assert_eq!(got.len(), 3);
        let got = w.append(&ev(3)).unwrap();
        assert_eq!(got.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![3, 4]);
        let c = read(&p).unwrap();
        assert_eq!(c.records.len(), 4);
        assert!(c.torn_tail.is_none());
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        Writer::create(&p, &ev(0)).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let p = p.clone();
                std::thread::spawn(move || {
                    // Each writer is like a separate process: its own file handle and offset.
                    let mut w = Writer::open(&p, 0, 1).unwrap();
                    for i in 0..50 {
                        w.append(&ev(1000 * t + i + 1)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c = read(&p).unwrap();
        assert_eq!(c.records.len(), 401);
        let mut ids: Vec<String> = c
            .records
            .iter()
            .map(|r| match &r.event {
                Event::Control { id, .. } => id.clone(),
                _ => unreachable!(),
            })
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 401, "every request is there exactly once");
    }

    #[test]
    fn torn_tail_is_reported_then_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let (mut w, _) = Writer::create(&p, &ev(0)).unwrap();
        w.append(&ev(1)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"v\":1,\"seq\":3,\"ti").unwrap();
        let c = read(&p).unwrap();
        assert_eq!(c.records.len(), 2);
        assert_eq!(c.torn_tail, Some(18));
        let mut w2 = Writer::open(&p, 0, 1).unwrap();
        let recs = w2.append(&ev(2)).unwrap();
        assert_eq!(recs.last().unwrap().seq, 3);
        assert!(read(&p).unwrap().torn_tail.is_none());
    }

    #[test]
    fn an_altered_record_is_named_by_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let (mut w, _) = Writer::create(&p, &ev(0)).unwrap();
        w.append(&ev(1)).unwrap();
        w.append(&ev(2)).unwrap();
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replacen("\"r1\"", "\"r9\"", 1);
        std::fs::write(&p, text).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("journal.jsonl:2: record 2 was altered: the line is not sealed as agentloop wrote it"),
            "{e}"
        );
    }
}
