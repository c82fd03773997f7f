//! The API's errors, all answered as `{"error": "..."}` with a fitting status, and
//! extractors whose rejections take the same shape.

use axum::Json;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    Unauthorized,
    NotFound(String),
    /// A registered run whose directory was deleted.
    Gone(String),
    Bad(String),
    /// Refused for who asked (the agent controlling its own run).
    Forbidden(String),
    Conflict(String),
    Internal(String),
    /// Axum's own rejection (malformed JSON 400, too large 413, …).
    Rejected(StatusCode, String),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "a valid token is required".to_string(),
            ),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            ApiError::Gone(m) => (StatusCode::GONE, m),
            ApiError::Bad(m) => (StatusCode::BAD_REQUEST, m),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, m),
            ApiError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, m),
            ApiError::Rejected(status, m) => (status, m),
        };
        (status, Json(json!({ "error": message }))).into_response()
    }
}

/// `Query`, whose rejections answer in the API's JSON error shape.
pub(crate) struct Q<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for Q<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| Q(q))
            .map_err(|e| ApiError::Rejected(e.status(), e.body_text()))
    }
}

/// A JSON body, or the reason it is not one; serde's unknown-field errors are a bad
/// request, not "unprocessable".
pub(crate) fn json_body<T>(
    body: Result<Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<T>, ApiError> {
    body.map_err(|e| {
        let status = if e.status() == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            e.status()
        };
        ApiError::Rejected(status, e.body_text())
    })
}
