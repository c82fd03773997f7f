//! The filter as one long-running process (git's `filter.<driver>.process`, protocol
//! version 2): git starts it once per command and sends it each file in turn, instead
//! of starting a filter per file. Everything in pkt-lines (four hexadecimal digits of
//! length, then the data; `0000` flushes).

use std::io::{BufRead, Read, Write};
use std::path::Path;

/// The most data one pkt-line carries.
const MAX_DATA: usize = 65516;

/// One pkt-line read.
#[derive(Debug, PartialEq)]
enum Pkt {
    Flush,
    Data(Vec<u8>),
    /// The stream ended between pkt-lines.
    End,
}

fn read_pkt(r: &mut impl Read) -> std::io::Result<Pkt> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..])?;
        if n == 0 {
            return if got == 0 {
                Ok(Pkt::End)
            } else {
                Err(std::io::ErrorKind::UnexpectedEof.into())
            };
        }
        got += n;
    }
    let len = std::str::from_utf8(&len)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| std::io::Error::other("not a pkt-line length"))?;
    match len {
        0 => Ok(Pkt::Flush),
        1..=4 => Err(std::io::Error::other("a pkt-line shorter than its header")),
        _ => {
            let mut data = vec![0u8; len - 4];
            r.read_exact(&mut data)?;
            Ok(Pkt::Data(data))
        }
    }
}

fn write_pkt(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    for chunk in data.chunks(MAX_DATA) {
        write!(w, "{:04x}", chunk.len() + 4)?;
        w.write_all(chunk)?;
    }
    Ok(())
}

fn flush_pkt(w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(b"0000")
}

/// The text lines up to the next flush (each without its newline).
fn read_lines(r: &mut impl Read) -> std::io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    loop {
        match read_pkt(r)? {
            Pkt::Flush => return Ok(Some(lines)),
            Pkt::Data(d) => {
                let text = String::from_utf8_lossy(&d);
                lines.push(text.strip_suffix('\n').unwrap_or(&text).to_string());
            }
            Pkt::End if lines.is_empty() => return Ok(None),
            Pkt::End => return Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

/// The content pkt-lines up to the next flush, as a reader.
struct Content<'a, R: Read> {
    r: &'a mut R,
    data: Vec<u8>,
    at: usize,
    done: bool,
}

impl<R: Read> Read for Content<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.data.len() {
            if self.done {
                return Ok(0);
            }
            match read_pkt(self.r)? {
                Pkt::Flush => self.done = true,
                Pkt::Data(d) => {
                    self.data = d;
                    self.at = 0;
                }
                Pkt::End => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            }
        }
        let n = buf.len().min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Content written out as pkt-lines of the most data each carries.
struct Packets<'a, W: Write> {
    w: &'a mut W,
    buf: Vec<u8>,
}

impl<'a, W: Write> Packets<'a, W> {
    fn new(w: &'a mut W) -> Self {
        Packets {
            w,
            buf: Vec::with_capacity(MAX_DATA),
        }
    }

    /// What is left, out.
    fn end(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            write_pkt(self.w, &self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl<W: Write> Write for Packets<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(MAX_DATA - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == MAX_DATA {
            write_pkt(self.w, &self.buf)?;
            self.buf.clear();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serves git on `input` and `output` until it closes the stream: the handshake, then
/// each file's `clean` or `smudge` with `store` as the LFS store.
pub fn serve(store: &Path, mut input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let hello = read_lines(&mut input)?.unwrap_or_default();
    if hello.first().map(String::as_str) != Some("git-filter-client")
        || !hello.iter().any(|l| l == "version=2")
    {
        return Err(std::io::Error::other(
            "not git's long-running filter protocol, version 2",
        ));
    }
    write_pkt(&mut output, b"git-filter-server\n")?;
    write_pkt(&mut output, b"version=2\n")?;
    flush_pkt(&mut output)?;
    output.flush()?;
    let offered = read_lines(&mut input)?.unwrap_or_default();
    for cap in ["capability=clean", "capability=smudge"] {
        if offered.iter().any(|l| l == cap) {
            write_pkt(&mut output, format!("{cap}\n").as_bytes())?;
        }
    }
    flush_pkt(&mut output)?;
    output.flush()?;
    while let Some(keys) = read_lines(&mut input)? {
        let command = keys
            .iter()
            .find_map(|k| k.strip_prefix("command="))
            .unwrap_or("")
            .to_string();
        let mut content = Content {
            r: &mut input,
            data: Vec::new(),
            at: 0,
            done: false,
        };
        // The whole input is read before answering: git writes it all first. A
        // smudge's answer (the content, however large) goes out as it is read from the
        // store, after a success said first; a clean's (a pointer) once it is known.
        let done = match command.as_str() {
            // Asked only of a filter that may delay (this one says it cannot): no
            // content follows; none is delayed.
            "list_available_blobs" => {
                flush_pkt(&mut output)?;
                write_pkt(&mut output, b"status=success\n")?;
                flush_pkt(&mut output)?;
                output.flush()?;
                continue;
            }
            "smudge" => {
                let mut pointer = Vec::new();
                content.read_to_end(&mut pointer)?;
                write_pkt(&mut output, b"status=success\n")?;
                flush_pkt(&mut output)?;
                let mut sent = Packets::new(&mut output);
                let done = super::smudge(store, &pointer, &mut sent).and_then(|()| sent.end());
                flush_pkt(&mut output)?;
                // What turned out wrong after it was sent is an error all the same: git
                // then throws what it got away.
                if done.is_err() {
                    write_pkt(&mut output, b"status=error\n")?;
                }
                flush_pkt(&mut output)?;
                output.flush()?;
                continue;
            }
            "clean" => {
                let mut answer = Vec::new();
                super::clean(store, &mut content, &mut answer).map(|()| answer)
            }
            _ => Err(std::io::Error::other("a command this filter does not know")),
        };
        // What is left of the content is read past, whatever happened.
        std::io::copy(&mut content, &mut std::io::sink())?;
        match done {
            Ok(answer) => {
                write_pkt(&mut output, b"status=success\n")?;
                flush_pkt(&mut output)?;
                write_pkt(&mut output, &answer)?;
                flush_pkt(&mut output)?;
                // The status stays as said.
                flush_pkt(&mut output)?;
            }
            Err(_) => {
                // The filter is required: git fails the command.
                write_pkt(&mut output, b"status=error\n")?;
                flush_pkt(&mut output)?;
            }
        }
        output.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        write_pkt(&mut v, data).unwrap();
        v
    }

    #[test]
    fn the_handshake_then_a_smudge_and_a_clean_as_git_sends_them() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("lfs/objects");
        let content = b"the content\n".repeat(10_000);
        let (oid, pointer) = crate::testing::lfs_pointer(&content);
        crate::testing::lfs_store(d.path(), &oid, &content);
        let mut input = Vec::new();
        for l in ["git-filter-client\n", "version=2\n"] {
            input.extend(pkt(l.as_bytes()));
        }
        input.extend(b"0000");
        for l in [
            "capability=clean\n",
            "capability=smudge\n",
            "capability=delay\n",
        ] {
            input.extend(pkt(l.as_bytes()));
        }
        input.extend(b"0000");
        input.extend(pkt(b"command=smudge\n"));
        input.extend(pkt(b"pathname=a.dat\n"));
        input.extend(b"0000");
        input.extend(pkt(pointer.as_bytes()));
        input.extend(b"0000");
        input.extend(pkt(b"command=clean\n"));
        input.extend(pkt(b"pathname=b.dat\n"));
        input.extend(b"0000");
        input.extend(pkt(b"new content\n"));
        input.extend(b"0000");
        // Asked only of a filter that can delay: no content follows.
        input.extend(pkt(b"command=list_available_blobs\n"));
        input.extend(b"0000");
        let mut out = Vec::new();
        serve(&store, &input[..], &mut out).unwrap();

        let mut r = &out[..];
        let lines = |r: &mut &[u8]| read_lines(r).unwrap().unwrap();
        assert_eq!(lines(&mut r), ["git-filter-server", "version=2"]);
        assert_eq!(
            lines(&mut r),
            ["capability=clean", "capability=smudge"],
            "only what it does"
        );
        assert_eq!(lines(&mut r), ["status=success"]);
        let mut smudged = Vec::new();
        Content {
            r: &mut r,
            data: Vec::new(),
            at: 0,
            done: false,
        }
        .read_to_end(&mut smudged)
        .unwrap();
        assert_eq!(smudged, content, "in pkt-lines of at most {MAX_DATA} bytes");
        assert_eq!(lines(&mut r), Vec::<String>::new());
        assert_eq!(lines(&mut r), ["status=success"]);
        let (new_oid, new_pointer) = crate::testing::lfs_pointer(b"new content\n");
        assert_eq!(
            read_pkt(&mut r).unwrap(),
            Pkt::Data(new_pointer.into_bytes())
        );
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::Flush);
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::Flush);
        assert_eq!(lines(&mut r), Vec::<String>::new(), "no blob delayed");
        assert_eq!(lines(&mut r), ["status=success"]);
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::End);
        let kept = store
            .join(&new_oid[..2])
            .join(&new_oid[2..4])
            .join(&new_oid);
        assert_eq!(std::fs::read(kept).unwrap(), b"new content\n");
    }

    #[test]
    fn what_is_not_git_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let mut input = pkt(b"hello\n");
        input.extend(b"0000");
        assert!(serve(d.path(), &input[..], &mut Vec::new()).is_err());
        assert!(serve(d.path(), &b"zz"[..], &mut Vec::new()).is_err());
    }
}
