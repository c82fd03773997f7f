//! Mock model services on 127.0.0.1, driven by a scenario: the real agent CLIs talk
//! to them in tests instead of the remote service. Every request is recorded.
//!
//! A scenario is a list of steps. Each request that offers tools (the agent's main
//! conversation) takes the next step; requests without tools (titles, routing and
//! other side calls) get a short reply that uses no tokens. One module per API says
//! how its replies and errors look.

mod anthropic;
mod chat;
mod gemini;
mod responses;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Token counts a reply reports, chosen by the scenario so the ledger can be checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Step {
    /// A text answer that ends the turn.
    Text {
        text: String,
        #[serde(default)]
        tokens: Tokens,
    },
    /// A tool call, e.g. Claude's `Bash` with `{"command": …}` or Codex's
    /// `exec_command` with `{"cmd": …}`.
    Tool {
        name: String,
        input: Value,
        #[serde(default)]
        tokens: Tokens,
    },
    /// An HTTP error: 429 (with `retry_after` seconds), 529, 401…
    Error {
        status: u16,
        #[serde(default = "default_error_type")]
        kind: String,
        message: String,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Accept the request, send nothing for `seconds`.
    Stall { seconds: u64 },
}

fn default_error_type() -> String {
    "api_error".into()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub steps: Vec<Step>,
    /// Conversations that run at once (agents of several workers): a request whose
    /// body contains a lane's key is answered from that lane's steps, in order, so
    /// the answers do not depend on which request comes first.
    #[serde(default)]
    pub lanes: Vec<(String, Vec<Step>)>,
    /// Every model call takes a step, tools offered or not (Aider writes its edits in
    /// its text and offers none).
    #[serde(default)]
    pub untooled: bool,
    /// The tokens each side call's reply reports (none unless set), so that a test can
    /// hold a CLI's count to everything it was served.
    #[serde(default)]
    pub side: Tokens,
}

impl Scenario {
    pub fn new(steps: Vec<Step>) -> Scenario {
        Scenario {
            steps,
            ..Scenario::default()
        }
    }

    /// Each side call's reply reports `tokens`.
    pub fn side_tokens(mut self, tokens: Tokens) -> Scenario {
        self.side = tokens;
        self
    }

    /// Every model call takes the next step, whether it offers tools or not.
    pub fn untooled(mut self) -> Scenario {
        self.untooled = true;
        self
    }

    /// A scenario of lanes only (see [`Scenario::lanes`]).
    pub fn lanes(lanes: Vec<(String, Vec<Step>)>) -> Scenario {
        Scenario {
            lanes,
            ..Scenario::default()
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// The index of the step it was answered with (`None`: a side call).
    pub step: Option<usize>,
    /// The lane it was answered from, if it was.
    pub lane: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages, streaming SSE on `/v1/messages`.
    Anthropic,
    /// OpenAI Responses, streaming SSE on `/v1/responses`.
    OpenAi,
    /// Google's Gemini API: `models/M:streamGenerateContent?alt=sse` and
    /// `models/M:generateContent`.
    Gemini,
    /// OpenAI Chat Completions on `/v1/chat/completions`, streamed or not.
    Chat,
}

struct Shared {
    api: Api,
    steps: Vec<Step>,
    next: Mutex<usize>,
    lanes: Vec<(String, Vec<Step>)>,
    /// The next step of each lane.
    lane_next: Mutex<Vec<usize>>,
    untooled: bool,
    side: Tokens,
    /// The tokens of every reply sent, side calls' too.
    served: Mutex<Tokens>,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
}

/// A running mock server; stops when dropped.
pub struct MockServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    pub fn start(api: Api, scenario: Scenario) -> MockServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            api,
            steps: scenario.steps,
            next: Mutex::new(0),
            lane_next: Mutex::new(vec![0; scenario.lanes.len()]),
            lanes: scenario.lanes,
            untooled: scenario.untooled,
            side: scenario.side,
            served: Mutex::new(Tokens::default()),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        MockServer {
            addr,
            shared,
            server,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The tokens of every reply sent so far, side calls' too.
    pub fn served(&self) -> Tokens {
        self.shared.served.lock().map(|t| *t).unwrap_or_default()
    }

    /// Steps answered so far.
    pub fn steps_used(&self) -> usize {
        self.shared.next.lock().map(|n| *n).unwrap_or(0)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A call of the model, as the API names it.
struct ModelCall {
    model: String,
    /// Answer as a stream (SSE) or as one JSON body.
    stream: bool,
}

/// The model call a request is, in `api`'s terms; `None` for any other request.
fn model_call(api: Api, method: &str, path: &str, body: &Value) -> Option<ModelCall> {
    if method != "POST" {
        return None;
    }
    let body_model = || {
        body.get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_string()
    };
    match api {
        Api::Anthropic => (path.starts_with("/v1/messages") && !path.contains("count_tokens"))
            .then(|| ModelCall {
                model: body_model(),
                stream: true,
            }),
        Api::OpenAi => path.starts_with("/v1/responses").then(|| ModelCall {
            model: body_model(),
            stream: true,
        }),
        Api::Gemini => gemini::model_call(path).map(|(model, stream)| ModelCall { model, stream }),
        Api::Chat => path
            .split('?')
            .next()
            .is_some_and(|p| p.ends_with("/chat/completions"))
            .then(|| ModelCall {
                model: body_model(),
                stream: body.get("stream").and_then(Value::as_bool) == Some(true),
            }),
    }
}

/// Whether a request offers the model tools (the agent's main conversation).
fn offers_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let mut body = String::new();
    let _ = req.as_reader().read_to_string(&mut body);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let method = req.method().to_string();
    let path = req.url().to_string();
    let Some(call) = model_call(sh.api, &method, &path, &body) else {
        sh.requests.lock().unwrap().push(Recorded {
            method,
            path,
            body,
            step: None,
            lane: None,
        });
        let _ = req.respond(
            tiny_http::Response::from_string("{}")
                .with_header(header("Content-Type", "application/json")),
        );
        return;
    };
    let main = sh.untooled || offers_tools(&body);
    let text = body.to_string();
    let lane = sh
        .lanes
        .iter()
        .position(|(key, _)| main && text.contains(key.as_str()));
    let step = if let Some(l) = lane {
        let mut next = sh.lane_next.lock().unwrap();
        let i = next[l];
        next[l] += 1;
        Some(i)
    } else if main {
        let mut next = sh.next.lock().unwrap();
        let i = *next;
        *next += 1;
        Some(i)
    } else {
        None
    };
    sh.requests.lock().unwrap().push(Recorded {
        method,
        path,
        body: body.clone(),
        step,
        lane: lane.map(|l| sh.lanes[l].0.clone()),
    });
    let steps = match lane {
        Some(l) => &sh.lanes[l].1,
        None => &sh.steps,
    };
    let reply = match step {
        Some(i) => steps.get(i).cloned().unwrap_or(Step::Text {
            text: format!("(mock scenario exhausted after {} steps)", steps.len()),
            tokens: Tokens::default(),
        }),
        None => Step::Text {
            text: match sh.api {
                Api::Gemini => gemini::side_text(&body),
                _ => "Mock title".into(),
            },
            tokens: sh.side,
        },
    };
    match reply {
        Step::Error {
            status,
            kind,
            message,
            retry_after,
        } => {
            let payload = match sh.api {
                Api::Anthropic => anthropic::error_body(&kind, &message),
                Api::OpenAi | Api::Chat => responses::error_body(&kind, &message),
                Api::Gemini => gemini::error_body(status, &kind, &message, retry_after),
            };
            let mut resp = tiny_http::Response::from_string(payload.to_string())
                .with_status_code(status)
                .with_header(header("Content-Type", "application/json"));
            if let Some(s) = retry_after {
                resp = resp.with_header(header("retry-after", &s.to_string()));
                let reset = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() + s)
                    .unwrap_or(0);
                let limit_headers = match sh.api {
                    Api::Anthropic => anthropic::limit_headers(reset),
                    Api::OpenAi | Api::Chat => responses::limit_headers(s),
                    Api::Gemini => Vec::new(),
                };
                for (k, v) in limit_headers {
                    resp = resp.with_header(header(k, &v));
                }
            }
            let _ = req.respond(resp);
        }
        Step::Stall { seconds } => {
            let reader = Stall {
                until: Instant::now() + Duration::from_secs(seconds),
            };
            let resp = tiny_http::Response::new(
                200.into(),
                vec![header("Content-Type", "text/event-stream")],
                reader,
                None,
                None,
            );
            let _ = req.respond(resp);
        }
        Step::Text { tokens, .. } | Step::Tool { tokens, .. } => {
            if let Ok(mut served) = sh.served.lock() {
                served.input += tokens.input;
                served.output += tokens.output;
                served.cache_read += tokens.cache_read;
                served.cache_write += tokens.cache_write;
            }
            let n = step.unwrap_or(0);
            let (body, stream) = match sh.api {
                Api::Anthropic => (anthropic::sse(&reply, &call.model, n), true),
                Api::OpenAi => (responses::sse(&reply, &call.model, n), true),
                Api::Gemini => (
                    gemini::reply(&reply, &call.model, n, call.stream),
                    call.stream,
                ),
                Api::Chat => (
                    chat::reply(&reply, &call.model, n, call.stream),
                    call.stream,
                ),
            };
            let content_type = if stream {
                "text/event-stream"
            } else {
                "application/json"
            };
            let resp = tiny_http::Response::from_data(body)
                .with_header(header("Content-Type", content_type))
                .with_header(header("Cache-Control", "no-cache"));
            let _ = req.respond(resp);
        }
    }
}

fn header(k: &str, v: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("valid header")
}

/// A body that sends nothing until its time is up.
struct Stall {
    until: Instant,
}

impl Read for Stall {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        while Instant::now() < self.until {
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(0)
    }
}

pub(super) fn event(out: &mut String, name: &str, data: Value) {
    out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
}
