//! `serve`: a docstore over HTTP for programs this project did not write — the ReAct environment
//! (`POST /v1/step`, stateless), DSPy's ColBERT retrieval client (`GET|POST /api/search`),
//! Search-R1's retrieval client (`POST /retrieve`) and `GET /health`.
//!
//! - [`state`]: the opaque, signed step state.
//! - [`step`]: [`ServedDocstore`] and one step from a state.
//! - [`pool`]: the few threads a large index is searched on.
//! - [`recent`]: the pages steps opened last, so the Lookups after a Search do not search again.
//! - [`retrieve`]: the two retrieval shapes over the index's BM25 ranking.
//!
//! What a hostile client can do is bounded: a body over [`ServeLimits::body_bytes`] is a 413, a
//! client slow to send its headers is dropped after [`ServeLimits::header_timeout`], a request
//! whose body or answer takes longer than [`ServeLimits::request_timeout`] is a 408, at most
//! [`ServeLimits::max_connections`] connections are served at once (the rest wait in the
//! kernel's queue), and a client that goes away mid-answer only drops its own request.

pub mod pool;
pub mod recent;
pub mod retrieve;
pub mod state;
pub mod step;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tokio::net::TcpListener;

pub use state::{StateError, StateKey, StepState};
pub use step::{ServedDocstore, StepError, Stepped};

/// The bounds a server holds its clients to.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// The largest request body (1 MiB).
    pub body_bytes: usize,
    /// How long a client may take to send a request's headers (also an idle keep-alive
    /// connection's life).
    pub header_timeout: Duration,
    /// How long a request may take from its headers to its answer, body included.
    pub request_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// After a stop signal, how long requests in flight may take to finish.
    pub drain_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            body_bytes: 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_connections: 1024,
            drain_timeout: Duration::from_secs(30),
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
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(limits.body_bytes))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the requests in flight
/// finish (for at most [`ServeLimits::drain_timeout`]) and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &ServeLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
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
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
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
        tracing::warn!(
            "requests still in flight after {} s: stopping anyway",
            limits.drain_timeout.as_secs()
        );
    }
    Ok(())
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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            axum::Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

impl From<StepError> for ApiError {
    fn from(error: StepError) -> ApiError {
        match error {
            StepError::Docstore(error) => ApiError {
                status: StatusCode::BAD_GATEWAY,
                message: format!("{:#}", anyhow::Error::new(error)),
            },
            StepError::Worker => ApiError {
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
    retrieval: impl FnOnce(&crate::docstore::PageIndex) -> Result<T, crate::docstore::IndexError> + Send + 'static,
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
        .ok_or_else(|| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: "the retrieval's worker failed".to_owned(),
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
    search(&served, request).await
}

async fn search_post(State(served): State<Arc<Served>>, body: Bytes) -> Result<Response, ApiError> {
    search(&served, json_body(&body)?).await
}

async fn search(served: &Served, request: SearchRequest) -> Result<Response, ApiError> {
    let k = retrieve::hits_wanted(request.k, retrieve::DEFAULT_K, "k").map_err(ApiError::bad_request)?;
    retrieve::check_query(&request.query).map_err(ApiError::bad_request)?;
    let answer = on_index(served, move |index| {
        retrieve::colbert_search(index, &request.query, k)
    })
    .await?;
    Ok(axum::Json(answer).into_response())
}

#[derive(Deserialize)]
struct RetrieveRequest {
    queries: Vec<String>,
    #[serde(default)]
    topk: Option<usize>,
    #[serde(default)]
    return_scores: bool,
}

async fn post_retrieve(State(served): State<Arc<Served>>, body: Bytes) -> Result<Response, ApiError> {
    let request: RetrieveRequest = json_body(&body)?;
    let topk =
        retrieve::hits_wanted(request.topk, retrieve::DEFAULT_TOPK, "topk").map_err(ApiError::bad_request)?;
    retrieve::check_queries(&request.queries).map_err(ApiError::bad_request)?;
    let scores = request.return_scores;
    let result = on_index(&served, move |index| {
        request
            .queries
            .iter()
            .map(|query| retrieve::r1_retrieve(index, query, topk, scores))
            .collect::<Result<Vec<_>, _>>()
    })
    .await?;
    Ok(axum::Json(serde_json::json!({ "result": result })).into_response())
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
    crate::docstore::page::cut_marked(text, 200)
}
