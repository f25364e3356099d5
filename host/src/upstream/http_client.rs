//! The HTTP client of streamable-HTTP upstream servers: rmcp's reqwest client, whose
//! answer limits fail the one call they cut short with runbox's error for an answer past
//! the cap (`oversize.rs`), so that the caller is told why and the connection goes on.
//! rmcp would report a body past its limit as a transport error and an SSE event past it
//! as a closed stream; both stay what they are for every other failure.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::oversize::over_cap_error;

/// rmcp's reqwest client with runbox's answer cap.
#[derive(Clone)]
pub struct CappedHttp {
    client: reqwest::Client,
    cap: usize,
}

impl CappedHttp {
    /// A client whose answers past `cap` bytes fail their call. It follows no redirect
    /// (an upstream's URL is the operator's, and a redirect would carry its headers on),
    /// and keeps no idle connection (as rmcp's own client, for the same reason: an answer
    /// cut short leaves its connection unusable).
    pub fn new(cap: usize) -> reqwest::Result<CappedHttp> {
        crate::tls::crypto_ready();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(CappedHttp { client, cap })
    }

    /// The answer that takes the place of one past the cap, for the call `id`.
    fn over_cap(&self, id: RequestId) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::error(over_cap_error(self.cap), Some(id))
    }
}

type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;
type SseStream = BoxStream<'static, Result<Sse, SseError>>;

/// Whether rmcp ended an SSE stream because an event passed its size limit. rmcp keeps
/// that error's type to itself; its text is all it shows (tests/mcp_client/code_mode.py's
/// `limits_over_http` holds this to rmcp's behaviour).
fn is_event_too_large(error: &SseError) -> bool {
    matches!(error, SseError::Body(inner) if inner.to_string().contains("SSE event exceeded the maximum size"))
}

/// `stream` with an event past the cap replaced by the error answer for `id`.
fn capped_stream(stream: SseStream, id: RequestId, over_cap: ServerJsonRpcMessage) -> SseStream {
    let mut over_cap = Some((id, over_cap));
    stream
        .map(move |event| match event {
            Err(e) if is_event_too_large(&e) => match over_cap.take() {
                Some((id, message)) => {
                    tracing::warn!(%id, "an upstream answer past the cap was dropped; its call fails, the connection stays");
                    Ok(Sse {
                        data: serde_json::to_string(&message).ok(),
                        ..Sse::default()
                    })
                }
                None => Err(e),
            },
            other => other,
        })
        .boxed()
}

impl StreamableHttpClient for CappedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted {
        let id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let posted = self
            .client
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        let Some(id) = id else { return posted };
        match posted {
            Err(StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                tracing::warn!(%id, "an upstream answer past the cap was not read; its call fails, the connection stays");
                Ok(StreamableHttpPostResponse::Json(self.over_cap(id), None))
            }
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let over_cap = self.over_cap(id.clone());
                Ok(StreamableHttpPostResponse::Sse(
                    capped_stream(stream, id, over_cap),
                    session,
                ))
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseStream, StreamableHttpError<reqwest::Error>> {
        self.client
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseStream, StreamableHttpError<reqwest::Error>> {
        self.client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
