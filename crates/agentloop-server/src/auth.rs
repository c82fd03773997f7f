//! The token every API request carries.

use axum::http::HeaderMap;
use serde::Deserialize;

use crate::Server;
use crate::error::ApiError;

#[derive(Deserialize, Default)]
pub(crate) struct TokenQuery {
    pub token: Option<String>,
}

/// The token from `Authorization: Bearer …` or `?token=` (for EventSource).
pub(crate) fn authorize(
    s: &Server,
    headers: &HeaderMap,
    query_token: Option<&str>,
) -> Result<(), ApiError> {
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
