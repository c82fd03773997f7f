//! A stand-in for a Kubernetes API server with one node, on 127.0.0.1, for the calls
//! agentloop's Kubernetes executor makes: `batch/v1` Jobs, pods (with their logs) and
//! Secrets in a namespace — create, get, list and watch by label selector, delete
//! with a propagation policy. It behaves as the real one does where the executor
//! depends on it: a bearer token or `401`; `409 AlreadyExists`; `404 NotFound`; `422
//! Invalid` for a Job the API would refuse; one resource version counter; a watch
//! that streams `ADDED`/`MODIFIED`/`DELETED` events from a version, and an `ERROR`
//! event with a `410 Gone` `Status` when that version is older than the history
//! kept; a log that is `400` while the container waits and streams with
//! `follow=true`. Its controllers ([`controllers`]) run each Job's pod as a process
//! of this machine (no images: the container's command is run as it is).

pub mod admission;
pub mod controllers;
pub mod kubelet;
mod pods;
pub mod store;
mod stream;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::forge::header;
use controllers::Node;
use kubelet::Proc;
use store::{Fields, Kind, Selector, Store, status};

pub struct Shared {
    token: String,
    node: Node,
    store: Mutex<Store>,
    procs: Mutex<BTreeMap<String, Proc>>,
    changed: Condvar,
    dir: tempfile::TempDir,
    requests: Mutex<Vec<Recorded>>,
    /// Creations whose answer is lost: the object is made, the connection closed.
    drop_answers: AtomicU32,
    /// Watches answered `410 Gone`.
    expired: AtomicU32,
    /// Log streams still to break, and broken.
    break_logs: AtomicU32,
    broken_logs: AtomicU32,
    /// What a read of one Job (`GET` of its name) is answered with instead, when
    /// set: `403 Forbidden` (a service account without `get` on `jobs`) or `503`.
    job_reads: Mutex<Option<u16>>,
    stopped: AtomicBool,
}

/// A request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub url: String,
    pub body: Value,
}

pub struct MockKubernetes {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    threads: Vec<JoinHandle<()>>,
}

impl MockKubernetes {
    /// An API server whose one node offers `cpu` (e.g. `"2"`) and `memory` (`"8Gi"`),
    /// answering bearer token `token`.
    pub fn start(token: &str, cpu: &str, memory: &str) -> MockKubernetes {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            token: token.to_string(),
            node: Node {
                cpu_milli: controllers::quantity(cpu, true).expect("a CPU quantity"),
                memory: controllers::quantity(memory, false).expect("a memory quantity"),
            },
            store: Mutex::new(Store::new()),
            procs: Mutex::new(BTreeMap::new()),
            changed: Condvar::new(),
            dir: tempfile::tempdir().expect("a temporary directory"),
            requests: Mutex::new(Vec::new()),
            drop_answers: AtomicU32::new(0),
            expired: AtomicU32::new(0),
            break_logs: AtomicU32::new(0),
            broken_logs: AtomicU32::new(0),
            job_reads: Mutex::new(None),
            stopped: AtomicBool::new(false),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let http = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        let weak = Arc::downgrade(&shared);
        let control = std::thread::spawn(move || {
            while let Some(sh) = weak.upgrade() {
                if sh.stopped.load(Ordering::SeqCst) {
                    return;
                }
                controllers::reconcile(&sh);
                drop(sh);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        MockKubernetes {
            addr,
            shared,
            server,
            threads: vec![http, control],
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig for this server, context `stand-in`, namespace `namespace`.
    pub fn kubeconfig(&self, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n    server: {}\ncontexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n    user: agentloop\n    namespace: {namespace}\ncurrent-context: stand-in\nusers:\n- name: agentloop\n  user:\n    token: {}\n",
            self.url(),
            self.shared.token
        )
    }

    /// The objects of a kind (`jobs`, `pods`, `secrets`) in every namespace.
    pub fn objects(&self, plural: &str) -> Vec<Value> {
        let st = self.shared.store.lock().unwrap();
        st.objects
            .iter()
            .filter(|((k, _, _), _)| k.plural() == plural)
            .map(|(_, o)| o.clone())
            .collect()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Ends every open watch and forgets the history: a watch resumed from a version
    /// seen so far gets `410 Gone`.
    pub fn compact(&self) {
        self.shared.store.lock().unwrap().compact();
        self.shared.changed.notify_all();
    }

    /// How many watches were answered `410 Gone`.
    pub fn expired(&self) -> u32 {
        self.shared.expired.load(Ordering::SeqCst)
    }

    /// The next `n` creations are made but their answers lost (what comes back on the
    /// connection is no HTTP answer).
    pub fn lose_create_answers(&self, n: u32) {
        self.shared.drop_answers.store(n, Ordering::SeqCst);
    }

    /// Labels `namespace` `pod-security.kubernetes.io/enforce: restricted`: its pods
    /// must pass the `restricted` Pod Security Standard ([`admission`]).
    pub fn enforce_restricted(&self, namespace: &str) {
        let mut st = self.shared.store.lock().unwrap();
        st.restricted.insert(namespace.to_string());
    }

    /// The next `n` log streams of a running container break after their first bytes
    /// (the connection closed mid-stream, as a proxy's timeout or a node's restart of
    /// its kubelet does).
    pub fn break_log_streams(&self, n: u32) {
        self.shared.break_logs.store(n, Ordering::SeqCst);
    }

    /// How many log streams were broken so far.
    pub fn broken_log_streams(&self) -> u32 {
        self.shared.broken_logs.load(Ordering::SeqCst)
    }

    /// Deletes a pod as an administrator would (`kubectl delete pod`).
    pub fn delete_pod(&self, namespace: &str, name: &str) {
        let key = (Kind::Pod, namespace.to_string(), name.to_string());
        controllers::delete(&mut self.shared.store.lock().unwrap(), &key, "Background");
        self.shared.changed.notify_all();
    }

    /// From now on a read of one Job is answered `code`: `403 Forbidden` as RBAC
    /// answers it (the role lost `get` on `jobs`), or `503 ServiceUnavailable` (an
    /// overloaded server, a gateway with no server behind it); lists and watches still
    /// answer.
    pub fn fail_job_reads(&self, code: u16) {
        *self.shared.job_reads.lock().unwrap() = Some(code);
    }

    /// The node fails: its containers die at once and its pods are removed.
    pub fn fail_node(&self) {
        kubelet::fail_node(&self.shared);
    }
}

impl Drop for MockKubernetes {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.server.unblock();
        for (_, p) in self.shared.procs.lock().unwrap().iter() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(p.pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

type Answer = (u16, Value);

fn handle(sh: &Arc<Shared>, mut req: tiny_http::Request) {
    let mut body = String::new();
    let _ = req.as_reader().read_to_string(&mut body);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let method = req.method().to_string();
    let url = req.url().to_string();
    sh.requests.lock().unwrap().push(Recorded {
        method: method.clone(),
        url: url.clone(),
        body: body.clone(),
    });
    let authorized = req.headers().iter().any(|h| {
        h.field.equiv("Authorization") && h.value.as_str() == format!("Bearer {}", sh.token)
    });
    if !authorized {
        return respond(
            req,
            (401, status(401, "Unauthorized", "Unauthorized", None)),
        );
    }
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let query: BTreeMap<String, String> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), unescape(v)))
        .collect();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (kind, ns, name, sub) = match parts.as_slice() {
        ["api", "v1", "namespaces", ns, plural, rest @ ..]
        | ["apis", "batch", "v1", "namespaces", ns, plural, rest @ ..] => {
            let kind = match (*plural, parts[0]) {
                ("pods", "api") => Kind::Pod,
                ("secrets", "api") => Kind::Secret,
                ("events", "api") => Kind::Event,
                ("jobs", "apis") => Kind::Job,
                _ => return respond(req, not_found(path)),
            };
            (
                kind,
                ns.to_string(),
                rest.first().map(|s| s.to_string()),
                rest.get(1).copied(),
            )
        }
        _ => return respond(req, not_found(path)),
    };
    let watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let selector =
        match Selector::parse(query.get("labelSelector").map(String::as_str).unwrap_or("")) {
            Ok(s) => s,
            Err(e) => return respond(req, (400, status(400, "BadRequest", &e, None))),
        };
    match (method.as_str(), name, sub) {
        ("GET", None, _) if watch => stream::watch_stream(sh, req, kind, &ns, &selector, &query),
        ("GET", None, _) => {
            let fields =
                match Fields::parse(query.get("fieldSelector").map(String::as_str).unwrap_or("")) {
                    Ok(f) => f,
                    Err(e) => return respond(req, (400, status(400, "BadRequest", &e, None))),
                };
            let st = sh.store.lock().unwrap();
            let mut items = st.list(kind, &ns, &selector);
            items.retain(|o| fields.picks(o));
            let list = json!({
                "kind": format!("{}List", kind.name()), "apiVersion": kind.api_version(),
                "metadata": {"resourceVersion": st.rv.to_string()}, "items": items,
            });
            drop(st);
            respond(req, (200, list))
        }
        ("POST", None, _) => {
            let answer = create(sh, kind, &ns, body);
            if answer.0 == 201 && sh.drop_answers.load(Ordering::SeqCst) > 0 {
                sh.drop_answers.fetch_sub(1, Ordering::SeqCst);
                // The object exists; the client never hears so: the connection
                // breaks where the answer should be.
                let mut w = req.into_writer();
                let _ = w.write_all(b"\x15\x03\x01 connection reset\r\n\r\n");
                let _ = w.flush();
                return;
            }
            respond(req, answer)
        }
        ("GET", Some(name), Some("log")) if kind == Kind::Pod => {
            stream::log(sh, req, &ns, &name, &query)
        }
        ("GET", Some(name), None)
            if kind == Kind::Job && *sh.job_reads.lock().unwrap() == Some(503) =>
        {
            let message = "the server is currently unable to handle the request";
            respond(
                req,
                (
                    503,
                    status(503, "ServiceUnavailable", message, Some((kind, &name))),
                ),
            )
        }
        ("GET", Some(name), None)
            if kind == Kind::Job && sh.job_reads.lock().unwrap().is_some() =>
        {
            let message = format!(
                "{} \"{name}\" is forbidden: User \"system:serviceaccount:{ns}:agentloop\" cannot get resource \"{}\" in API group \"{}\" in the namespace \"{ns}\"",
                kind.resource(),
                kind.plural(),
                kind.group(),
            );
            respond(
                req,
                (403, status(403, "Forbidden", &message, Some((kind, &name)))),
            )
        }
        ("GET", Some(name), None) => {
            let st = sh.store.lock().unwrap();
            let answer = match st.get(&(kind, ns, name.clone())) {
                Some(o) => (200, o.clone()),
                None => gone(kind, &name),
            };
            drop(st);
            respond(req, answer)
        }
        ("PATCH", Some(name), None) => {
            let key = (kind, ns, name.clone());
            let mut st = sh.store.lock().unwrap();
            let answer = if st.get(&key).is_none() {
                gone(kind, &name)
            } else {
                st.update(&key, |o| merge_patch(o, &body));
                (200, st.get(&key).cloned().unwrap_or_default())
            };
            drop(st);
            sh.changed.notify_all();
            respond(req, answer)
        }
        ("DELETE", Some(name), None) => {
            let propagation = body["propagationPolicy"].as_str().unwrap_or(match kind {
                // The API's default for Jobs orphans their pods.
                Kind::Job => "Orphan",
                _ => "Background",
            });
            let key = (kind, ns, name.clone());
            let mut st = sh.store.lock().unwrap();
            let answer = match st.get(&key).cloned() {
                None => gone(kind, &name),
                Some(o) => {
                    controllers::delete(&mut st, &key, propagation);
                    let uid = o["metadata"]["uid"].clone();
                    (
                        200,
                        json!({
                            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "details": {"name": name, "group": kind.group(), "kind": kind.plural(), "uid": uid},
                        }),
                    )
                }
            };
            drop(st);
            sh.changed.notify_all();
            respond(req, answer)
        }
        _ => respond(
            req,
            (
                405,
                status(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    None,
                ),
            ),
        ),
    }
}

/// A JSON merge patch (RFC 7386): objects merged key by key, `null` removes, anything
/// else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (k, v) in fields {
        if v.is_null() {
            if let Some(o) = target.as_object_mut() {
                o.remove(k);
            }
        } else {
            merge_patch(&mut target[k.as_str()], v);
        }
    }
}

fn not_found(path: &str) -> Answer {
    (
        404,
        status(
            404,
            "NotFound",
            &format!("the server could not find the requested resource ({path})"),
            None,
        ),
    )
}

pub(super) fn gone(kind: Kind, name: &str) -> Answer {
    (
        404,
        status(
            404,
            "NotFound",
            &format!("{} \"{name}\" not found", kind.resource()),
            Some((kind, name)),
        ),
    )
}

fn unescape(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the API refuses of a Job: a name that is not a DNS label, a pod template
/// that may restart its containers, no container.
fn invalid_job(job: &Value) -> Option<String> {
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let label = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !label {
        return Some(format!(
            "Job.batch \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": must be no more than 63 characters and a lowercase RFC 1123 label"
        ));
    }
    let spec = &job["spec"]["template"]["spec"];
    if !matches!(spec["restartPolicy"].as_str(), Some("Never" | "OnFailure")) {
        return Some(format!(
            "Job.batch \"{name}\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        ));
    }
    if spec["containers"].as_array().is_none_or(Vec::is_empty) {
        return Some(format!(
            "Job.batch \"{name}\" is invalid: spec.template.spec.containers: Required value"
        ));
    }
    None
}

fn create(sh: &Arc<Shared>, kind: Kind, ns: &str, body: Value) -> Answer {
    if !body["metadata"]["name"].is_string() {
        return (
            422,
            status(
                422,
                "Invalid",
                "metadata.name: Required value: name or generateName is required",
                None,
            ),
        );
    }
    if kind == Kind::Job
        && let Some(why) = invalid_job(&body)
    {
        return (422, status(422, "Invalid", &why, None));
    }
    let mut object = body;
    if kind == Kind::Job {
        object["status"] = json!({});
    }
    let answer = sh.store.lock().unwrap().create(kind, ns, object);
    sh.changed.notify_all();
    match answer {
        Ok(o) => (201, o),
        Err(s) => (409, s),
    }
}

pub(super) fn respond(req: tiny_http::Request, (code, body): Answer) {
    let _ = req.respond(
        tiny_http::Response::from_string(body.to_string())
            .with_status_code(code)
            .with_header(header("Content-Type", "application/json")),
    );
}
