//! The sandbox's only way out: a proxy agentloop runs on the host for one iteration.
//!
//! The agent's network namespace has nothing but its own loopback. Inside, the bridge
//! (`bridge.rs`) listens on that loopback — an HTTP proxy port, and each allowed
//! loopback port of the host — and carries every connection over a Unix socket to this
//! proxy, which opens it on the host only when `[sandbox] allow_hosts` lists the target.
//! Each refusal is one line in the iteration's `sandbox-network.jsonl`.
//!
//! On the socket, each connection starts with one line: `F HOST:PORT` (a forwarded
//! loopback port) or `P` (an HTTP proxy request follows: `CONNECT host:port` or an
//! absolute-form `GET http://host/…`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use agentloop_config::sandbox::{AllowList, split_host};
use agentloop_journal::{Denial, DenialKind};

/// The proxy of one iteration; ended when dropped.
pub struct Proxy {
    socket: PathBuf,
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Listens on a fresh Unix socket; refusals are appended to `denials`.
    pub fn start(allow: AllowList, denials: PathBuf) -> std::io::Result<Proxy> {
        // Short: a socket's path has at most 107 bytes.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = PathBuf::from(format!(
            "/tmp/agentloop-net-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir)?;
        let socket = dir.join("s");
        let listener = UnixListener::bind(&socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let allow = Arc::new(allow);
        let thread = std::thread::spawn(move || {
            let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let conn = match conn {
                    Ok(c) => c,
                    // Out of descriptors: wait for some to close rather than spin.
                    Err(_) => {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        continue;
                    }
                };
                // At most this many connections at once (a thread and two
                // descriptors each): more is the agent exhausting the driver's.
                if open.load(Ordering::SeqCst) >= MAX_OPEN {
                    drop(conn);
                    continue;
                }
                open.fetch_add(1, Ordering::SeqCst);
                let (allow, denials, open) = (allow.clone(), denials.clone(), open.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &allow, &denials);
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Ok(Proxy {
            socket,
            dir,
            stop,
            thread: Some(thread),
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop.
        let _ = UnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const MAX_HEAD: usize = 64 * 1024;

/// The most connections one iteration's proxy serves at once: an agent's model
/// client and tools open a few; a few thousand would take the driver's descriptors.
const MAX_OPEN: usize = 128;

fn serve(conn: UnixStream, allow: &AllowList, denials: &Path) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut first = String::new();
    reader.by_ref().take(512).read_line(&mut first)?;
    let first = first.trim_end();
    if let Some(target) = first.strip_prefix("F ") {
        let (host, port) = split_host(target).map_err(std::io::Error::other)?;
        let port = port.unwrap_or(80);
        if !allow.allows(&host, port) {
            refuse_log(denials, &host, port, "a connection");
            return Ok(());
        }
        let upstream = TcpStream::connect((host.as_str(), port))?;
        let early = reader.buffer().to_vec();
        conn.set_read_timeout(None)?;
        return splice(conn, upstream, &early);
    }
    if first != "P" {
        return Ok(());
    }
    let head = read_head(&mut reader)?;
    let mut conn = conn;
    let Some(req) = Request::parse(&head) else {
        return answer(
            &mut conn,
            "400 Bad Request",
            "agentloop sandbox: not a proxy request\n",
        );
    };
    if !allow.allows(&req.host, req.port) {
        refuse_log(denials, &req.host, req.port, &req.method);
        return answer(
            &mut conn,
            "403 Forbidden",
            &format!(
                "agentloop sandbox: {} is not in [sandbox] allow_hosts\n",
                req.target()
            ),
        );
    }
    let mut upstream = match TcpStream::connect((req.host.as_str(), req.port)) {
        Ok(s) => s,
        Err(e) => {
            return answer(
                &mut conn,
                "502 Bad Gateway",
                &format!("agentloop sandbox: cannot reach {}: {e}\n", req.target()),
            );
        }
    };
    let early = reader.buffer().to_vec();
    conn.set_read_timeout(None)?;
    if req.method == "CONNECT" {
        conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        return splice(conn, upstream, &early);
    }
    upstream.write_all(req.origin_head().as_bytes())?;
    relay_one(conn, upstream, &early)
}

/// A plain request carried to its server, one per connection: the server was asked
/// to close after it, and the client is told so in the response's head too. A client
/// told nothing keeps the connection for its next request, which then races the
/// close coming to it through the bridge (a reset, seen under load: `ECONNRESET` from
/// Claude Code in the sandbox).
fn relay_one(conn: UnixStream, upstream: TcpStream, early: &[u8]) -> std::io::Result<()> {
    let mut client_read = conn.dup()?;
    let mut server_write = upstream.dup()?;
    server_write.write_all(early)?;
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_read, &mut server_write);
        server_write.half_close();
    });
    let mut from_server = BufReader::new(upstream);
    let mut conn = conn;
    let relayed = relay_response(&mut from_server, &mut conn);
    // The client hears the end either way. A response that could not be read ends
    // the connection both ways: the copy of what the client sends stops with it.
    let _ = conn.shutdown(if relayed.is_ok() {
        Shutdown::Write
    } else {
        Shutdown::Both
    });
    let _ = up.join();
    relayed
}

/// The server's response to the client, its head saying `Connection: close`; an
/// informational response (`100 Continue`) comes before the final one.
fn relay_response(
    from_server: &mut BufReader<TcpStream>,
    conn: &mut UnixStream,
) -> std::io::Result<()> {
    loop {
        let head = read_head(from_server)?;
        let last = !informational(&head);
        conn.write_all(closing_head(&head).as_bytes())?;
        if last {
            break;
        }
    }
    std::io::copy(from_server, conn)?;
    Ok(())
}

/// A response head whose status is 1xx (but a protocol switch).
fn informational(head: &str) -> bool {
    let status = head.split_whitespace().nth(1).unwrap_or("");
    status.len() == 3 && status.starts_with('1') && status != "101"
}

/// `head` (a response's, CRLF or LF lines) with its own `Connection` and
/// `Keep-Alive` headers replaced by `Connection: close`; an informational head
/// unchanged.
fn closing_head(head: &str) -> String {
    if informational(head) {
        return head.to_string();
    }
    let mut out = String::with_capacity(head.len() + 19);
    for line in head.lines().filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !out.is_empty()
            && (name.eq_ignore_ascii_case("connection") || name.eq_ignore_ascii_case("keep-alive"))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out
}

fn refuse_log(denials: &Path, host: &str, port: u16, what: &str) {
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let d = Denial {
        kind: DenialKind::Network,
        target: target.clone(),
        detail: format!("{what} to {target} refused: not in [sandbox] allow_hosts"),
    };
    if let Ok(line) = serde_json::to_string(&d)
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(denials)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn answer(conn: &mut UnixStream, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\nX-Agentloop-Sandbox: refused\r\n\r\n{body}",
        body.len()
    )?;
    conn.flush()
}

fn read_head<R: Read>(reader: &mut BufReader<R>) -> std::io::Result<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.by_ref().take(8192).read_line(&mut line)?;
        if n == 0 || head.len() + line.len() > MAX_HEAD {
            return Err(std::io::Error::other("no head"));
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            return Ok(head);
        }
    }
}

/// A proxy request's head.
struct Request {
    method: String,
    host: String,
    port: u16,
    /// Origin-form path, for a request that is not CONNECT.
    path: String,
    version: String,
    headers: Vec<String>,
}

impl Request {
    fn parse(head: &str) -> Option<Request> {
        let mut lines = head.lines();
        let mut parts = lines.next()?.split_whitespace();
        let method = parts.next()?.to_string();
        let target = parts.next()?;
        let version = parts.next().unwrap_or("HTTP/1.1").to_string();
        let headers = lines
            .filter(|l| !l.is_empty())
            .filter(|l| {
                let name = l
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                !matches!(
                    name.as_str(),
                    "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
                )
            })
            .map(str::to_string)
            .collect();
        let (host, port, path) = if method == "CONNECT" {
            let (h, p) = split_host(target).ok()?;
            (h, p.unwrap_or(443), String::new())
        } else {
            let rest = target.strip_prefix("http://")?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let authority = authority.rsplit('@').next()?;
            let (h, p) = split_host(authority).ok()?;
            (h, p.unwrap_or(80), path.to_string())
        };
        Some(Request {
            method,
            host,
            port,
            path,
            version,
            headers,
        })
    }

    fn target(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The head as the server gets it: origin-form, one request per connection.
    fn origin_head(&self) -> String {
        let mut h = format!("{} {} {}\r\n", self.method, self.path, self.version);
        for l in &self.headers {
            h.push_str(l);
            h.push_str("\r\n");
        }
        h.push_str("Connection: close\r\n\r\n");
        h
    }
}

/// Copies both ways until each side has closed; `early` is what the client sent
/// after the part already read.
pub(super) fn splice<A, B>(a: A, b: B, early: &[u8]) -> std::io::Result<()>
where
    A: Read + Write + Send + 'static + Duplex,
    B: Read + Write + Send + 'static + Duplex,
{
    let mut a_read = a.dup()?;
    let mut b_write = b.dup()?;
    b_write.write_all(early)?;
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a_read, &mut b_write);
        b_write.half_close();
    });
    let (mut b_read, mut a_write) = (b, a);
    let _ = std::io::copy(&mut b_read, &mut a_write);
    a_write.half_close();
    let _ = up.join();
    Ok(())
}

/// A stream that can be cloned and closed for writing.
pub(super) trait Duplex: Sized {
    fn dup(&self) -> std::io::Result<Self>;
    fn half_close(&self);
}

impl Duplex for TcpStream {
    fn dup(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn half_close(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn dup(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn half_close(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: &[&str]) -> AllowList {
        AllowList::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn entries_allow_what_they_name() {
        let l = list(&["api.anthropic.com", "127.0.0.1:4000", "*.example.org:443"]);
        assert!(l.allows("api.anthropic.com", 443));
        assert!(l.allows("API.Anthropic.com", 8080));
        assert!(!l.allows("anthropic.com", 443));
        assert!(l.allows("127.0.0.1", 4000));
        assert!(l.allows("localhost", 4000));
        assert!(!l.allows("127.0.0.1", 4001));
        assert!(l.allows("a.example.org", 443));
        assert!(!l.allows("example.org", 443));
        assert!(!l.allows("a.example.org", 80));
        assert_eq!(l.loopback_ports(), vec![4000]);
    }

    #[test]
    fn a_loopback_entry_names_its_port_and_bad_entries_are_refused() {
        assert!(
            AllowList::parse(&["localhost".into()])
                .unwrap_err()
                .contains("name the port")
        );
        assert!(AllowList::parse(&["a b".into()]).is_err());
        assert!(AllowList::parse(&["host:99999".into()]).is_err());
        assert!(AllowList::parse(&["http://x".into()]).is_err());
        assert_eq!(split_host("[::1]:80").unwrap(), ("::1".into(), Some(80)));
    }

    #[test]
    fn requests_are_read_in_both_forms() {
        let r = Request::parse("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("example.com", 443));
        let r = Request::parse(
            "POST http://127.0.0.1:9/v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Connection: keep-alive\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("127.0.0.1", 9));
        assert_eq!(
            r.origin_head(),
            "POST /v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\n\r\n"
        );
        assert!(Request::parse("GET /relative HTTP/1.1\r\n\r\n").is_none());
    }

    /// The client of a plain request is told the connection closes after it, whatever
    /// the server said; a `100 Continue` goes through as it came.
    #[test]
    fn a_plain_requests_response_says_the_connection_closes() {
        assert_eq!(
            closing_head(
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n"
            ),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            closing_head("HTTP/1.0 404 Not Found\n\n"),
            "HTTP/1.0 404 Not Found\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            closing_head("HTTP/1.1 100 Continue\r\n\r\n"),
            "HTTP/1.1 100 Continue\r\n\r\n"
        );
        assert!(!informational("HTTP/1.1 101 Switching Protocols\r\n\r\n"));
    }

    /// A server on loopback for one connection, served by `serve` (the stream, and a
    /// reader of it); its port, and what `serve` returned once it has.
    fn server_once<T: Send + 'static>(
        serve: impl FnOnce(&mut std::net::TcpStream, &mut BufReader<std::net::TcpStream>) -> T
        + Send
        + 'static,
    ) -> (u16, std::thread::JoinHandle<T>) {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let served = std::thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            serve(&mut s, &mut r)
        });
        (port, served)
    }

    /// A proxy that lets through to 127.0.0.1:`port` (and the directory of its
    /// refusals, kept while it runs).
    fn proxy_to(port: u16) -> (tempfile::TempDir, Proxy) {
        let d = tempfile::tempdir().unwrap();
        let proxy = Proxy::start(
            list(&[&format!("127.0.0.1:{port}")]),
            d.path().join("denials.jsonl"),
        )
        .unwrap();
        (d, proxy)
    }

    /// Through the proxy, a plain request's client reads the whole response and then
    /// the end of the connection, with `Connection: close` in the head.
    #[test]
    fn a_plain_request_is_relayed_whole_and_closed() {
        let (port, served) = server_once(|s, r| {
            let head = read_head(r).unwrap();
            let mut body = [0u8; 5];
            r.read_exact(&mut body).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes")
                .unwrap();
            (head, body)
        });
        let (_d, proxy) = proxy_to(port);
        let mut c = UnixStream::connect(proxy.socket()).unwrap();
        write!(
            c,
            "P\nPOST http://127.0.0.1:{port}/v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"
        )
        .unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert_eq!(
            got,
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nyes"
        );
        let (head, body) = served.join().unwrap();
        assert_eq!(
            head,
            "POST /v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(&body, b"hello");
    }

    /// A server that closes without an answer: the client of a plain request sees the
    /// end of its connection, not a wait for ever.
    #[test]
    fn a_server_that_answers_nothing_ends_the_clients_connection() {
        let (port, served) = server_once(|_, r| {
            read_head(r).unwrap();
        });
        let (_d, proxy) = proxy_to(port);
        let mut c = UnixStream::connect(proxy.socket()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            c,
            "P\nGET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        .unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got)
            .expect("the end of the connection, not a timeout");
        assert!(got.is_empty());
        served.join().unwrap();
    }
}
