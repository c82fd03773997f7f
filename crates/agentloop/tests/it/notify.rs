//! Notifications of a real run: a webhook (plain, and HTTPS from a private CA) and a
//! command, each told when the run needs a person and when it ends.

use std::path::PathBuf;

use crate::support::{Scratch, agent};
#[test]
fn notifications_reach_a_webhook_and_a_command() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        listener.set_nonblocking(false).unwrap();
        for stream in listener.incoming().take(2) {
            let mut s = stream.unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            s.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            bodies.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
        bodies
    });

    let plan = "# N\n\n## T1: First\nVerify: test -f one.txt\nGate: after\n";
    let config = format!(
        "[notify]\nwebhook = \"http://127.0.0.1:{port}/hook\"\ncommand = [\"sh\", \"-c\", \"cat >> .git/notified\"]\n"
    );
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&config)
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    assert_eq!(p.run(&["approve"]).code, Some(0));
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    let bodies = received.join().unwrap();
    let events: Vec<&str> = bodies
        .iter()
        .map(|b| b["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["waiting", "completed"]);
    assert_eq!(
        bodies[0]["message"],
        "waiting for a person: review task T1 now that it is verified"
    );
    // The end says the verdict.
    assert!(
        bodies[1]["message"]
            .as_str()
            .unwrap()
            .contains("· verdict "),
        "{}",
        bodies[1]
    );
    assert!(bodies[1]["verdict"].is_string(), "{}", bodies[1]);
    let by_command = p.read(".git/notified");
    assert_eq!(by_command.matches("\"event\":").count(), 2, "{by_command}");
}

/// A CA and a certificate for 127.0.0.1 signed by it, made with the openssl CLI:
/// `(ca.pem, leaf.pem, leaf.key)` in `dir`.
fn tls_certificates(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (the CLI) is needed to make test certificates");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=agentloop test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("leaf.pem"),
        dir.join("leaf.key"),
    )
}

#[test]
fn an_https_webhook_gets_the_notification_from_a_private_ca() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{BufRead, BufReader, Read, Write};
    let certs = tempfile::tempdir().unwrap();
    let (ca, leaf, key) = tls_certificates(certs.path());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&leaf)
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(&key).unwrap();
    let tls_config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap(),
    );
    // One HTTPS request: its head and JSON body, or why the TLS session failed.
    let serve_once = |config: std::sync::Arc<rustls::ServerConfig>| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || -> Result<(String, serde_json::Value), String> {
            let (tcp, _) = listener.accept().unwrap();
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut r = BufReader::new(&mut tls);
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).map_err(|e| e.to_string())?;
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).map_err(|e| e.to_string())?;
            tls.write_all(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .map_err(|e| e.to_string())?;
            tls.conn.send_close_notify();
            let _ = tls.flush();
            Ok((head, serde_json::from_slice(&body).unwrap()))
        });
        (port, handle)
    };
    let (port, received) = serve_once(tls_config.clone());

    let plan = "# N\n\n## T1: First\nVerify: test -f one.txt\n";
    let config = format!(
        "[notify]\nwebhook = \"https://127.0.0.1:{port}/hook\"\nwebhook_ca = \"{}\"\n",
        ca.display()
    );
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&config)
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (head, body) = received.join().unwrap().unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    assert_eq!(body["event"], "completed");
    assert!(!r.stderr.contains("webhook"), "{}", r.stderr);

    // Without `webhook_ca` the public roots are trusted, and they do not vouch for a
    // private CA: the client refuses the certificate, says so, and the run is
    // unaffected.

    let (port, refused) = serve_once(tls_config);
    let q = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config(&format!(
            "[notify]\nwebhook = \"https://127.0.0.1:{port}/hook\"\n"
        ))
        .build();
    let r = q.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(refused.join().unwrap().is_err(), "no request got through");
    assert!(
        r.stderr.contains("webhook https://127.0.0.1")
            && r.stderr.to_lowercase().contains("certificate"),
        "{}",
        r.stderr
    );
}
