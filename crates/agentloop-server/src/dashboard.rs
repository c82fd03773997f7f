//! The web dashboard: a page, a stylesheet and five scripts compiled into the binary
//! (no Node, no build step). They hold no data, so they are served without the token; the page then
//! talks to the API with it.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::Server;

const INDEX: &str = include_str!("../assets/index.html");

/// `/assets/NAME` → (content type, body). The scripts load in this order.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    ("api.js", JS, include_str!("../assets/api.js")),
    ("dom.js", JS, include_str!("../assets/dom.js")),
    ("runs.js", JS, include_str!("../assets/runs.js")),
    ("run.js", JS, include_str!("../assets/run.js")),
    ("app.js", JS, include_str!("../assets/app.js")),
];
const JS: &str = "text/javascript; charset=utf-8";

/// Scripts and styles only from this server, no inline code, no framing, and the
/// token never leaves in a Referer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
}

pub(crate) fn routes() -> Router<Server> {
    let mut r = Router::new().route(
        "/",
        get(|| async { asset("text/html; charset=utf-8", INDEX) }),
    );
    for &(name, content_type, body) in ASSETS {
        r = r.route(
            &format!("/assets/{name}"),
            get(move || async move { asset(content_type, body) }),
        );
    }
    r
}
