//! `serve`: a docstore over HTTP for programs this project did not write — the ReAct environment
//! (`POST /v1/step`, stateless), DSPy's ColBERT retrieval client (`GET|POST /api/search`),
//! Search-R1's retrieval client (`POST /retrieve`) and `GET /health`.
//!
//! - [`state`]: the opaque, signed step state.
//! - [`step`]: [`ServedDocstore`] and one step from a state.
//! - [`pool`]: the few threads a large index is searched on.
//! - [`recent`]: the pages steps opened last, so the Lookups after a Search do not search again.
//! - [`retrieve`]: the two retrieval shapes over the index's BM25 ranking.
//! - [`connection`]: one connection's socket (the exchange's deadline, the lingering close) and
//!   the requests in flight.
//!
//! What a hostile client can do is bounded: a body over [`ServeLimits::body_bytes`] is a 413 the
//! client gets to read, a client slow to send its headers is dropped after
//! [`ServeLimits::header_timeout`], a request whose body or answer takes longer than
//! [`ServeLimits::request_timeout`] is a 408 and an answer not read by then is cut off, a
//! retrieval asking for more than [`retrieve::MAX_HITS`] hits or answering more than
//! [`ServeLimits::answer_bytes`] is a 413, a full queue of index searches is a 503, at most
//! [`ServeLimits::max_connections`] connections are served at once (the rest wait in the
//! kernel's queue), and a client that goes away mid-answer only drops its own request (its
//! search, still queued, is skipped).

pub mod connection;
mod pool;
pub mod recent;
pub mod retrieve;
mod state;
mod step;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, RawQuery, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tokio::net::TcpListener;

pub use pool::{PoolError, PoolSize};
pub use state::{StateError, StateKey, StepState};
pub use step::{ServedDocstore, StepError, Stepped};

/// How long a client told to retry after a 503 (a full queue of index searches) should wait, in
/// seconds.
const RETRY_AFTER_SECONDS: u64 = 1;

/// The bounds a server holds its clients to.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// The largest request body (1 MiB).
    pub body_bytes: usize,
    /// The largest answer (4 MiB): a retrieval's hits are bounded first by
    /// [`retrieve::MAX_HITS`]; this bounds what their texts come to.
    pub answer_bytes: usize,
    /// How long a client may take to send a request's headers (also an idle keep-alive
    /// connection's life).
    pub header_timeout: Duration,
    /// How long a request may take from its headers to its answer's last byte sent, its body
    /// included.
    pub request_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// After a stop signal, how long requests in flight may take to finish.
    pub drain_timeout: Duration,
    /// How long a connection the server ends reads what its client still sends, so that the
    /// client reads the answer (a 413) rather than a reset.
    pub linger: Duration,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            body_bytes: 1024 * 1024,
            answer_bytes: 4 * 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_connections: 1024,
            drain_timeout: Duration::from_secs(30),
            linger: Duration::from_secs(2),
        }
    }
}

/// What every request reads: the docstore and the key states are signed with.
pub struct Served {
    pub docstore: Arc<ServedDocstore>,
    pub key: StateKey,
}

/// The routes, with the body limit and the request timeout.
pub fn router(served: Arc<Served>, limits: &ServeLimits) -> Router {
    Router::new()
        .route("/v1/step", post(post_step))
        .route("/api/search", get(search_get).post(search_post))
        .route("/retrieve", post(post_retrieve))
        .route("/health", get(health))
        .fallback(no_route)
        .with_state(served)
        .layer(Extension(AnswerLimit(limits.answer_bytes)))
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(limits.body_bytes))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
}

/// How a server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Every request in flight was answered.
    Drained,
    /// The drain timeout passed with `requests` still in flight: they were dropped unanswered.
    Abandoned { requests: usize },
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the requests in flight
/// finish (for at most [`ServeLimits::drain_timeout`]) and says whether they all did.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &ServeLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<Shutdown> {
    use hyper_util::rt::{TokioIo, TokioTimer};

    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let in_flight = connection::InFlight::default();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, _peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, a connection reset before it was accepted: the
                    // listener itself is fine; wait a moment rather than spin.
                    tracing::warn!("accepting a connection failed: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let deadline = connection::ExchangeDeadline::default();
        let io = connection::ConnectionIo::new(stream, deadline.clone(), limits);
        let exchanges = connection::Exchanges::new(router.clone(), deadline, limits, in_flight.clone());
        let connection = http.serve_connection(TokioIo::new(io), exchanges);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away mid-answer ends its own connection, nothing else.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        // Connections still open with no request under way (a client slow to send its headers,
        // a close lingering) leave nothing unanswered.
        return Ok(match in_flight.count() {
            0 => Shutdown::Drained,
            requests => Shutdown::Abandoned { requests },
        });
    }
    Ok(Shutdown::Drained)
}

/// An error answer: `{"error": "..."}` with its status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn bad_request(message: impl std::fmt::Display) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.to_string(),
        }
    }

    fn too_large(message: impl std::fmt::Display) -> ApiError {
        ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: message.to_string(),
        }
    }

    fn busy() -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: PoolError::Busy.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}

impl From<retrieve::RequestError> for ApiError {
    fn from(error: retrieve::RequestError) -> ApiError {
        match error {
            retrieve::RequestError::TooManyHits { .. } => ApiError::too_large(error),
            _ => ApiError::bad_request(error),
        }
    }
}

/// [`ServeLimits::answer_bytes`], as the handlers read it.
#[derive(Clone, Copy)]
struct AnswerLimit(usize);

/// `answer` as a JSON response, or a 413 when it is larger than `limit`.
fn json_answer(
    answer: &impl serde::Serialize,
    AnswerLimit(limit): AnswerLimit,
) -> Result<Response, ApiError> {
    let bytes = serde_json::to_vec(answer).map_err(|error| ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("the answer does not serialize: {error}"),
    })?;
    if bytes.len() > limit {
        return Err(ApiError::too_large(format!(
            "the answer is {} bytes, more than the {limit} one answer can be: ask for fewer queries or hits",
            bytes.len()
        )));
    }
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        bytes,
    )
        .into_response())
}

impl From<StepError> for ApiError {
    fn from(error: StepError) -> ApiError {
        match error {
            StepError::Docstore(error) => ApiError {
                status: StatusCode::BAD_GATEWAY,
                message: format!("{:#}", anyhow::Error::new(error)),
            },
            StepError::Worker(PoolError::Busy) => ApiError::busy(),
            StepError::Worker(PoolError::Failed) => ApiError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: error.to_string(),
            },
            other => ApiError::bad_request(other),
        }
    }
}

/// A JSON body as `T`, or a 400 saying what is wrong with it.
fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))
}

#[derive(Deserialize)]
struct StepRequest {
    action: String,
    #[serde(default)]
    state: Option<String>,
}

async fn post_step(State(served): State<Arc<Served>>, body: Bytes) -> Result<Response, ApiError> {
    let request: StepRequest = json_body(&body)?;
    let docstore = &served.docstore;
    let state = match &request.state {
        None => docstore.first_state(),
        Some(text) => served
            .key
            .decode(text, docstore.id(), docstore.profile())
            .map_err(ApiError::bad_request)?,
    };
    let stepped = docstore.step(state, request.action).await?;
    Ok(axum::Json(serde_json::json!({
        "observation": stepped.observation,
        "state": served.key.encode(&stepped.state),
    }))
    .into_response())
}

/// Runs a retrieval on the threads that search the index (it is read from disk), or a 404 saying
/// that only an index ranks.
async fn on_index<T: Send + 'static>(
    served: &Served,
    retrieval: impl FnOnce(&crate::docstore::index::PageIndex) -> Result<T, crate::docstore::index::IndexError>
    + Send
    + 'static,
) -> Result<T, ApiError> {
    served
        .docstore
        .on_index(retrieval)
        .await
        .ok_or_else(|| ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!(
                "ranked retrieval needs an index: this server serves `{}`; serve `--docstore index:DIR` or `corpus:FILE`",
                served.docstore.info().kind
            ),
        })?
        .map_err(|error| match error {
            PoolError::Busy => ApiError::busy(),
            PoolError::Failed => ApiError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: "the retrieval's worker failed".to_owned(),
            },
        })?
        .map_err(|error| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: format!("{:#}", anyhow::Error::new(error)),
        })
}

#[derive(Deserialize)]
struct SearchRequest {
    query: String,
    #[serde(default)]
    k: Option<usize>,
}

async fn search_get(
    State(served): State<Arc<Served>>,
    Extension(limit): Extension<AnswerLimit>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let mut request = SearchRequest {
        query: String::new(),
        k: None,
    };
    let mut has_query = false;
    for (name, value) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        match &*name {
            "query" => {
                request.query = value.into_owned();
                has_query = true;
            }
            "k" => {
                request.k = Some(value.trim().parse().map_err(|_| {
                    ApiError::bad_request(format!("`k` must be a whole number, found `{}`", cut(&value)))
                })?);
            }
            _ => {}
        }
    }
    if !has_query {
        return Err(ApiError::bad_request(
            "missing `query`: GET /api/search?query=...&k=...",
        ));
    }
    search(&served, request, limit).await
}

async fn search_post(
    State(served): State<Arc<Served>>,
    Extension(limit): Extension<AnswerLimit>,
    body: Bytes,
) -> Result<Response, ApiError> {
    search(&served, json_body(&body)?, limit).await
}

async fn search(served: &Served, request: SearchRequest, limit: AnswerLimit) -> Result<Response, ApiError> {
    let k = retrieve::hits_wanted(request.k, retrieve::DEFAULT_K, "k")?;
    retrieve::check_query(&request.query)?;
    let profile = served.docstore.profile();
    let answer = on_index(served, move |index| {
        retrieve::colbert_search(index, &request.query, k, profile)
    })
    .await?;
    json_answer(&answer, limit)
}

#[derive(Deserialize)]
struct RetrieveRequest {
    queries: Vec<String>,
    #[serde(default)]
    topk: Option<usize>,
    #[serde(default)]
    return_scores: bool,
}

async fn post_retrieve(
    State(served): State<Arc<Served>>,
    Extension(limit): Extension<AnswerLimit>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: RetrieveRequest = json_body(&body)?;
    let topk = retrieve::hits_wanted(request.topk, retrieve::DEFAULT_TOPK, "topk")?;
    retrieve::check_queries(&request.queries, topk)?;
    let scores = request.return_scores;
    let profile = served.docstore.profile();
    let result = on_index(&served, move |index| {
        request
            .queries
            .iter()
            .map(|query| retrieve::r1_retrieve(index, query, topk, scores, profile))
            .collect::<Result<Vec<_>, _>>()
    })
    .await?;
    json_answer(&serde_json::json!({ "result": result }), limit)
}

async fn health(State(served): State<Arc<Served>>) -> Response {
    let info = served.docstore.info();
    axum::Json(serde_json::json!({
        "status": "ok",
        "docstore": info.kind,
        "snapshot": info.snapshot,
        "profile": served.docstore.profile(),
    }))
    .into_response()
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "no endpoint `{method} {}`: POST /v1/step, GET|POST /api/search, POST /retrieve, GET /health",
            cut(uri.path())
        ),
    }
}

/// Outside text as an error message shows it: at most 200 characters.
fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    crate::base::text::cut_marked(text, 200)
}
