//! `WebSearch`: the `WebSearch[query]` tool — a SerpApi-compatible Google search, retried and cached.
//!
//! The observation is the answer box's `answer`, else its `snippet`, else the first organic
//! result's `snippet`, else `No search result found for {query}.`. The API key goes only into the
//! request: never into a log, an error message (reqwest errors are stripped of their URL), the cache
//! or `Debug` output; a search URL's credentials go in a header, and into none of those either. A
//! response body is read up to [`MAX_BODY_BYTES`]. Failures are retried by
//! `http::retry`, as the other clients are (not a connection refused on this machine or its
//! private network, where nothing listens): a `Retry-After` longer than
//! [`WebSearchConfig::max_retry_after`] ends the retries with an error quoting it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::digest::file_key;
use crate::base::fsutil::atomic_write;
use crate::base::http::{
    self, AttemptFailure, BodyError, GaveUp, LazyClient, RetryAfter, RetryPolicy, read_body,
};
use crate::base::secret::ApiKey;
use crate::tools::{Tool, ToolError};

/// SerpApi's search endpoint.
pub const DEFAULT_SEARCH_URL: &str = "https://serpapi.com/search";

const NAME: &str = "WebSearch";
pub(crate) const EXAMPLES: &str = include_str!("../../fewshot/websearch.txt");
const CACHE_FORMAT: &str = "react-docstore.websearch.v1";
/// A larger response is an error: SerpApi's answers are a few dozen KB.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The longest backoff between two searches (backon's default, which this client always had).
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// Whether a cache miss may go to the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    #[default]
    Online,
    /// Serve from the cache only; a miss is an error.
    Offline,
}

/// How the WebSearch tool reaches its service.
#[derive(Debug, Clone)]
pub struct WebSearchConfig {
    /// A SerpApi-compatible endpoint; [`DEFAULT_SEARCH_URL`] by default.
    pub search_url: String,
    pub api_key: Option<ApiKey>,
    /// Where answers are cached (`{cache_dir}/websearch/{hash}.json`); `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    pub network: Network,
    /// Retries after the first attempt, on HTTP 429, 5xx and connection failures.
    pub max_retries: usize,
    /// The first retry's delay; each later one doubles it.
    pub first_retry_delay: Duration,
    /// The longest `Retry-After` honoured; a longer one ends the retries with an error.
    pub max_retry_after: Duration,
    pub timeout: Duration,
}

impl Default for WebSearchConfig {
    fn default() -> WebSearchConfig {
        WebSearchConfig {
            search_url: DEFAULT_SEARCH_URL.to_owned(),
            api_key: None,
            cache_dir: None,
            network: Network::Online,
            max_retries: 3,
            first_retry_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(120),
            timeout: Duration::from_secs(30),
        }
    }
}

/// Why a search failed after its retries. Messages never hold the API key.
#[derive(Debug, thiserror::Error)]
pub enum WebSearchError {
    #[error("the web search needs a SerpApi key: set `SERPAPI_API_KEY` or pass `--serpapi-key`")]
    MissingKey,
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("the web search for `{query}` failed")]
    Request {
        query: String,
        #[source]
        source: reqwest::Error,
    },
    /// The service is on this machine or its private network and refused the connection: not
    /// retried ([`http::refused_nearby`]).
    #[error(
        "the web search for `{query}` cannot reach `{server}`: connection refused, nothing listens there (is the service running, on that port?)"
    )]
    Refused {
        query: String,
        /// `host:port`.
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the web search for `{query}` answered HTTP {status}")]
    Status {
        query: String,
        status: u16,
        /// How long the service asked us to wait before trying again.
        retry_after: Option<RetryAfter>,
    },
    #[error(
        "the web search for `{query}` answered HTTP {status} and asked to wait {asked}, longer than the {max_wait_secs} s this client waits"
    )]
    WaitTooLong {
        query: String,
        status: u16,
        /// The service's own value: `1e30 s`, `250 ms`.
        asked: String,
        max_wait_secs: u64,
    },
    #[error("the web search for `{query}` answered with more than {limit} bytes")]
    TooLarge { query: String, limit: usize },
    #[error("the web search for `{query}` answered with a body that is not SerpApi JSON")]
    Body {
        query: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the web search for `{query}` is not cached and the network is off (`--offline`)")]
    OfflineMiss { query: String },
    #[error("cannot write the web-search cache file `{}`", path.display())]
    CacheWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl AttemptFailure for WebSearchError {
    fn is_transient(&self) -> bool {
        match self {
            WebSearchError::Request { source, .. } => {
                source.is_connect() || source.is_timeout() || source.is_body() || source.is_decode()
            }
            WebSearchError::Status { status, .. } => {
                reqwest::StatusCode::from_u16(*status).is_ok_and(crate::base::http::is_transient_status)
            }
            _ => false,
        }
    }

    fn retry_after(&self) -> Option<&RetryAfter> {
        match self {
            WebSearchError::Status { retry_after, .. } => retry_after.as_ref(),
            _ => None,
        }
    }

    fn failure(&self) -> String {
        match self {
            // `HTTP 503 Service Unavailable`, as the model client and the page fetcher say it.
            WebSearchError::Status { status, .. } => match reqwest::StatusCode::from_u16(*status) {
                Ok(status) => format!("HTTP {status}"),
                Err(_) => format!("HTTP {status}"),
            },
            WebSearchError::Request { source, .. } => http::transport_failure(source).to_owned(),
            other => other.to_string(),
        }
    }
}

/// `WebSearch[query]`.
#[derive(Debug)]
pub struct WebSearch {
    config: WebSearchConfig,
    /// Built by the first request: answers from the cache never load the TLS roots.
    client: LazyClient,
}

/// One cached answer. The key is never part of it.
#[derive(Debug, Serialize, Deserialize)]
struct CacheEntry {
    format: String,
    query: String,
    observation: String,
}

impl WebSearch {
    /// The tool for `config`. Credentials in the search URL (`http://user:pass@host/search`) go
    /// with every request as a header: the URL it keeps, logs and keys its cache by carries none.
    pub fn new(mut config: WebSearchConfig) -> Result<WebSearch, WebSearchError> {
        if config.api_key.is_none() && config.search_url == DEFAULT_SEARCH_URL {
            return Err(WebSearchError::MissingKey);
        }
        let timeout = config.timeout;
        let authorization = http::basic_auth_header(&config.search_url);
        config.search_url = http::without_credentials(&config.search_url);
        let client = LazyClient::new(move || {
            let mut headers = reqwest::header::HeaderMap::new();
            if let Some(authorization) = &authorization {
                headers.insert(reqwest::header::AUTHORIZATION, authorization.clone());
            }
            reqwest::Client::builder()
                .user_agent(crate::docstore::DEFAULT_USER_AGENT)
                .default_headers(headers)
                .timeout(timeout)
        });
        Ok(WebSearch { config, client })
    }

    /// Whether a request has built the HTTP client yet (it is built by the first one).
    pub fn client_built(&self) -> bool {
        self.client.is_built()
    }

    /// The observation for `query`: from the cache, else from the service (then cached).
    pub async fn search(&self, query: &str) -> Result<String, WebSearchError> {
        let query = query.trim();
        let cache_path = self.cache_path(query);
        let cached = [cache_path.clone(), self.legacy_cache_path(query)]
            .into_iter()
            .flatten()
            .find_map(|path| read_cache(&path, query));
        if let Some(observation) = cached {
            return Ok(observation);
        }
        if self.config.network == Network::Offline {
            return Err(WebSearchError::OfflineMiss {
                query: query.to_owned(),
            });
        }
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            min_delay: self.config.first_retry_delay,
            max_delay: MAX_RETRY_DELAY,
            max_retry_after: self.config.max_retry_after,
        };
        let server = format!("web search {}", http::server_name(&self.config.search_url));
        let body = http::retry(&server, &policy, || self.fetch(query))
            .await
            .map_err(|gave_up| match gave_up {
                GaveUp {
                    error: WebSearchError::Status { query, status, .. },
                    wait_too_long: Some(asked),
                    ..
                } => WebSearchError::WaitTooLong {
                    query,
                    status,
                    asked: asked.asked,
                    max_wait_secs: policy.max_retry_after.as_secs(),
                },
                GaveUp { error, .. } => error,
            })?;
        let observation = observation(query, &body);
        if let Some(path) = cache_path {
            write_cache(&path, query, &observation)?;
        }
        Ok(observation)
    }

    async fn fetch(&self, query: &str) -> Result<Value, WebSearchError> {
        let request_error = |source: reqwest::Error| WebSearchError::Request {
            query: query.to_owned(),
            source: source.without_url(),
        };
        let mut params = vec![
            ("engine", "google"),
            ("q", query),
            ("google_domain", "google.com"),
            ("gl", "us"),
            ("hl", "en"),
        ];
        if let Some(key) = &self.config.api_key {
            params.push(("api_key", key.expose()));
        }
        tracing::debug!(query, url = %self.config.search_url, "web search");
        let client = self
            .client
            .get()
            .map_err(|source| WebSearchError::Client(source.without_url()))?;
        let response = client
            .get(&self.config.search_url)
            .query(&params)
            .send()
            .await
            .map_err(|source| {
                let search_url = reqwest::Url::parse(&self.config.search_url);
                match search_url {
                    Ok(url) if http::refused_nearby(&source, &url) => WebSearchError::Refused {
                        query: query.to_owned(),
                        server: http::server_name(url.as_str()),
                        source: source.without_url(),
                    },
                    _ => request_error(source),
                }
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(WebSearchError::Status {
                query: query.to_owned(),
                status: status.as_u16(),
                retry_after: crate::base::http::retry_after(response.headers()),
            });
        }
        let body = read_body(response, MAX_BODY_BYTES)
            .await
            .map_err(|error| match error {
                BodyError::TooLarge => WebSearchError::TooLarge {
                    query: query.to_owned(),
                    limit: MAX_BODY_BYTES,
                },
                BodyError::Cut(source) => request_error(source),
            })?;
        serde_json::from_slice(&body).map_err(|source| WebSearchError::Body {
            query: query.to_owned(),
            source,
        })
    }

    /// `DIR/websearch/{key}.json`, the key's [`file_key`]: the service's URL and the query.
    fn cache_path(&self, query: &str) -> Option<PathBuf> {
        let dir = self.config.cache_dir.as_ref()?;
        let key = format!("{}\n{}", self.config.search_url, query);
        Some(
            dir.join("websearch")
                .join(format!("{}.json", file_key(key.as_bytes()))),
        )
    }

    /// Where releases before SHA-256 naming kept the entry (a 64-bit FNV-1a hash of the key): read
    /// when the entry is not under its name, so a cache kept from then still answers.
    fn legacy_cache_path(&self, query: &str) -> Option<PathBuf> {
        let dir = self.config.cache_dir.as_ref()?;
        let key = format!("{}\n{}", self.config.search_url, query);
        Some(
            dir.join("websearch")
                .join(format!("{:016x}.json", fnv1a(key.as_bytes()))),
        )
    }
}

impl Tool for WebSearch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "WebSearch[query], which searches the web with Google and returns the answer box or the first result's snippet. Useful for current events and facts that change."
    }

    fn examples(&self) -> Option<&str> {
        Some(EXAMPLES)
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.search(argument).await.map_err(|error| ToolError {
                tool: NAME.to_owned(),
                source: Box::new(error),
            })
        })
    }
}

/// What the model reads from a SerpApi response.
pub fn observation(query: &str, body: &Value) -> String {
    let answer_box = match &body["answer_box"] {
        Value::Array(boxes) => boxes.first().unwrap_or(&Value::Null),
        other => other,
    };
    let organic_snippet = body["organic_results"]
        .as_array()
        .and_then(|results| results.first())
        .map_or(&Value::Null, |first| &first["snippet"]);
    [&answer_box["answer"], &answer_box["snippet"], organic_snippet]
        .into_iter()
        .filter_map(|value| match value {
            Value::String(text) => Some(text.trim().to_owned()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
        .find(|text| !text.is_empty())
        .unwrap_or_else(|| format!("No search result found for {query}."))
}

fn read_cache(path: &Path, query: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let entry: CacheEntry = serde_json::from_str(&text).ok()?;
    // A hash collision or a stale format is a miss, not a wrong answer.
    (entry.format == CACHE_FORMAT && entry.query == query).then_some(entry.observation)
}

/// Writes the entry durably ([`atomic_write`]): a crash never leaves a torn cache file.
fn write_cache(path: &Path, query: &str, observation: &str) -> Result<(), WebSearchError> {
    let write_error = |source| WebSearchError::CacheWrite {
        path: path.to_owned(),
        source,
    };
    let entry = CacheEntry {
        format: CACHE_FORMAT.to_owned(),
        query: query.to_owned(),
        observation: observation.to_owned(),
    };
    // invariant: a struct of three strings always serializes
    let text = serde_json::to_string_pretty(&entry).expect("a cache entry always serializes");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    atomic_write(path, text.as_bytes()).map_err(write_error)
}

/// 64-bit FNV-1a: how releases before SHA-256 naming named a query's entry.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
