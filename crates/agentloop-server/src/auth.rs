//! The token every API request carries, checked by a layer in front of every API
//! route: `Authorization: Bearer …`, or `?token=` for EventSource, which cannot set
//! headers.

use axum::extract::{Query, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use serde::Deserialize;

use crate::Server;
use crate::error::ApiError;

#[derive(Deserialize, Default)]
struct TokenQuery {
    token: Option<String>,
}

/// The layer: a request without the token gets 401 and reaches no handler.
pub(crate) async fn require_token(
    State(s): State<Server>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let query = Query::<TokenQuery>::try_from_uri(req.uri())
        .ok()
        .and_then(|Query(q)| q.token);
    authorize(&s, req.headers(), query.as_deref())?;
    Ok(next.run(req).await)
}

fn authorize(s: &Server, headers: &HeaderMap, query_token: Option<&str>) -> Result<(), ApiError> {
    let given = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_string)
        .or_else(|| query_token.map(str::to_string));
    // Constant-time enough for a local token: compare every byte.
    match given {
        Some(g)
            if g.len() == s.token.len()
                && g.bytes()
                    .zip(s.token.bytes())
                    .fold(0u8, |a, (x, y)| a | (x ^ y))
                    == 0 =>
        {
            Ok(())
        }
        _ => Err(ApiError::Unauthorized),
    }
}
