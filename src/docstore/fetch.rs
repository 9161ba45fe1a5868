//! The polite HTTP client and the on-disk page cache.
//!
//! [`Fetcher::fetch`] serves a URL's body from the [`PageCache`] when it can; otherwise it makes
//! the request — at most `max_in_flight` at once across every question, identical concurrent
//! fetches merged into one, retried with exponential backoff on 429, 5xx and transport failures
//! (honouring `Retry-After`) — and caches the body. Offline, a cache miss is an error that names
//! what is missing.

use crate::http::retry_after;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backon::{ExponentialBuilder, Retryable};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::{DEFAULT_TIMEOUT, DocstoreConfig, DocstoreError};

/// How the client treats the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPolicy {
    /// One request's time limit, connection included.
    pub timeout: Duration,
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: usize,
    /// The first backoff delay; it doubles each retry, with jitter.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; longer ones are cut to this.
    pub max_retry_after: Duration,
    /// Requests in flight at once, across every question of the process.
    pub max_in_flight: usize,
    /// A larger response body is an error.
    pub max_body_bytes: usize,
}

impl Default for HttpPolicy {
    fn default() -> HttpPolicy {
        HttpPolicy {
            timeout: DEFAULT_TIMEOUT,
            max_retries: 5,
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            max_in_flight: 4,
            max_body_bytes: 32 * 1024 * 1024,
        }
    }
}

type SharedFetch = Shared<BoxFuture<'static, Result<Arc<str>, Arc<DocstoreError>>>>;

/// The shared HTTP client, cache and politeness limits. Cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<FetcherInner>,
}

struct FetcherInner {
    client: reqwest::Client,
    cache: PageCache,
    offline: bool,
    policy: HttpPolicy,
    permits: Semaphore,
    in_flight: Mutex<HashMap<String, SharedFetch>>,
    requests: AtomicU64,
}

impl Fetcher {
    pub fn new(config: &DocstoreConfig) -> Result<Fetcher, DocstoreError> {
        let client = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .timeout(config.http.timeout)
            .connect_timeout(config.http.timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()
            .map_err(DocstoreError::Client)?;
        Ok(Fetcher {
            inner: Arc::new(FetcherInner {
                client,
                cache: PageCache::new(config.cache_dir()),
                offline: config.offline,
                policy: config.http.clone(),
                permits: Semaphore::new(config.http.max_in_flight.max(1)),
                in_flight: Mutex::new(HashMap::new()),
                requests: AtomicU64::new(0),
            }),
        })
    }

    pub fn cache(&self) -> &PageCache {
        &self.inner.cache
    }

    /// How many HTTP requests this fetcher has sent (retries included).
    pub fn requests_sent(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// The body at `url`: from the cache, else fetched and cached. `query` names what was
    /// searched, for the offline error.
    pub async fn fetch(&self, url: &str, query: &str) -> Result<Arc<str>, DocstoreError> {
        if let Some(body) = self.inner.cache.get(url).await? {
            return Ok(body);
        }
        if self.inner.offline {
            return Err(DocstoreError::NotCached {
                query: query.to_owned(),
                url: url.to_owned(),
                cache_dir: self.inner.cache.dir().to_owned(),
            });
        }
        let flight = {
            let mut in_flight = self
                .inner
                .in_flight
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            match in_flight.get(url) {
                Some(flight) => flight.clone(),
                None => {
                    let inner = self.inner.clone();
                    let key = url.to_owned();
                    let flight = async move {
                        let result = inner.fetch_and_cache(&key).await.map_err(Arc::new);
                        inner
                            .in_flight
                            .lock()
                            .unwrap_or_else(|poison| poison.into_inner())
                            .remove(&key);
                        result
                    }
                    .boxed()
                    .shared();
                    in_flight.insert(url.to_owned(), flight.clone());
                    flight
                }
            }
        };
        flight
            .await
            .map_err(|error| Arc::try_unwrap(error).unwrap_or_else(DocstoreError::Shared))
    }
}

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug)]
enum AttemptError {
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
    },
    Network(reqwest::Error),
    TooLarge,
}

impl AttemptError {
    fn is_transient(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => {
                *status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
            }
            AttemptError::Network(error) => !error.is_builder() && !error.is_redirect(),
            AttemptError::TooLarge => false,
        }
    }
}

impl FetcherInner {
    async fn fetch_and_cache(&self, url: &str) -> Result<Arc<str>, DocstoreError> {
        // A flight that just landed may have cached it between our miss and this flight's start.
        if let Some(body) = self.cache.get(url).await? {
            return Ok(body);
        }
        let attempts = AtomicUsize::new(0);
        let policy = &self.policy;
        let backoff = ExponentialBuilder::default()
            .with_min_delay(policy.min_backoff)
            .with_max_delay(policy.max_backoff)
            .with_max_times(policy.max_retries)
            .with_jitter();
        let body = (|| async {
            attempts.fetch_add(1, Ordering::Relaxed);
            self.attempt(url).await
        })
        .retry(backoff)
        .when(AttemptError::is_transient)
        .adjust(|error, delay| match error {
            // Honour the server's Retry-After when it is longer than our own backoff.
            AttemptError::Status {
                retry_after: Some(wait),
                ..
            } => delay.map(|delay| delay.max((*wait).min(policy.max_retry_after))),
            _ => delay,
        })
        .notify(|error, delay| {
            tracing::warn!(url, ?delay, "retrying after {error:?}");
        })
        .await
        .map_err(|error| {
            let attempts = attempts.load(Ordering::Relaxed);
            match error {
                AttemptError::Status { status, .. } => DocstoreError::Status {
                    url: url.to_owned(),
                    status: status.as_u16(),
                    attempts,
                },
                AttemptError::Network(source) => DocstoreError::Network {
                    url: url.to_owned(),
                    attempts,
                    source,
                },
                AttemptError::TooLarge => DocstoreError::TooLarge {
                    url: url.to_owned(),
                    limit: policy.max_body_bytes,
                },
            }
        })?;
        let body: Arc<str> = Arc::from(String::from_utf8_lossy(&body).as_ref());
        if body.trim().is_empty() {
            return Err(DocstoreError::EmptyBody { url: url.to_owned() });
        }
        self.cache.put(url, &body).await?;
        Ok(body)
    }

    /// One request, holding one of the in-flight permits (not while backing off).
    async fn attempt(&self, url: &str) -> Result<Vec<u8>, AttemptError> {
        let _permit = self
            .permits
            .acquire()
            .await
            // invariant: nothing calls `close` on `permits`, so `acquire` cannot fail
            .expect("the semaphore is never closed");
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut response = self.client.get(url).send().await.map_err(AttemptError::Network)?;
        let status = response.status();
        if !status.is_success() {
            return Err(AttemptError::Status {
                status,
                retry_after: retry_after(response.headers()),
            });
        }
        let limit = self.policy.max_body_bytes;
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(AttemptError::TooLarge);
        }
        let mut body = Vec::with_capacity(response.content_length().unwrap_or(0) as usize);
        while let Some(chunk) = response.chunk().await.map_err(AttemptError::Network)? {
            if body.len() + chunk.len() > limit {
                return Err(AttemptError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// Raw response bodies on disk, keyed by URL, so both profiles share them.
///
/// Each entry is one JSON file `{"url", "fetched_at", "body"}` under `DIR/http/`, named by a hash
/// of the URL (plus a short ASCII slug for people browsing the directory): no query can name a
/// path outside the directory. Entries are written to a temporary file and renamed into place,
/// so a crash never leaves a torn entry; an entry whose URL differs (a hash collision) or that
/// cannot be read is a miss.
#[derive(Debug, Clone)]
pub struct PageCache {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct CacheEntry<'a> {
    url: std::borrow::Cow<'a, str>,
    fetched_at: u64,
    body: std::borrow::Cow<'a, str>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl PageCache {
    pub fn new(dir: PathBuf) -> PageCache {
        PageCache { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file an URL's entry lives in: always directly inside `DIR/http/`.
    pub fn path_for(&self, url: &str) -> PathBuf {
        self.dir.join("http").join(entry_name(url))
    }

    pub async fn get(&self, url: &str) -> Result<Option<Arc<str>>, DocstoreError> {
        let path = self.path_for(url);
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(DocstoreError::Cache { path, source }),
        };
        match serde_json::from_slice::<CacheEntry<'_>>(&bytes) {
            Ok(entry) if entry.url == url => Ok(Some(Arc::from(entry.body.as_ref()))),
            Ok(_) => Ok(None),
            Err(error) => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable cache entry: {error}");
                Ok(None)
            }
        }
    }

    pub async fn put(&self, url: &str, body: &str) -> Result<(), DocstoreError> {
        let path = self.path_for(url);
        // invariant: `path_for` joins a file name to the cache directory, so the path has a parent
        let dir = path.parent().expect("entries live in a directory").to_owned();
        let io = |source| DocstoreError::Cache {
            path: path.clone(),
            source,
        };
        tokio::fs::create_dir_all(&dir).await.map_err(io)?;
        let entry = CacheEntry {
            url: url.into(),
            fetched_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
            body: body.into(),
        };
        // invariant: a struct of strings and an integer always serializes
        let json = serde_json::to_vec(&entry).expect("a cache entry serialises");
        let temp = dir.join(format!(
            ".{}.{}.{}.tmp",
            entry_name(url),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = async {
            let mut file = tokio::fs::File::create(&temp).await?;
            tokio::io::AsyncWriteExt::write_all(&mut file, &json).await?;
            file.sync_all().await?;
            drop(file);
            tokio::fs::rename(&temp, &path).await
        }
        .await;
        if let Err(error) = written {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(io(error));
        }
        Ok(())
    }
}

/// `slug-hash.json`: the slug keeps ASCII letters, digits and `-` of the URL's last part; the
/// 128-bit FNV-1a hash of the whole URL makes the name unique.
fn entry_name(url: &str) -> String {
    let tail = url.rsplit(['=', '/']).next().unwrap_or("");
    let slug: String = tail
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let slug: String = slug.chars().take(48).collect();
    let slug = if slug.is_empty() { "page".to_owned() } else { slug };
    format!("{slug}-{:032x}.json", fnv1a_128(url.as_bytes()))
}

fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    bytes.iter().fold(OFFSET, |hash, &byte| {
        (hash ^ u128::from(byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_stay_inside_the_cache() {
        let cache = PageCache::new(PathBuf::from("/cache"));
        for url in [
            "https://en.wikipedia.org/w/index.php?search=Colorado+orogeny",
            "https://en.wikipedia.org/w/index.php?search=../../etc/passwd",
            "https://en.wikipedia.org/w/index.php?search=a/b/../..%2F..",
            "https://en.wikipedia.org/w/index.php?search=Zürich/東京/..",
            "",
        ] {
            let path = cache.path_for(url);
            assert_eq!(path.parent(), Some(Path::new("/cache/http")), "{url}");
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            );
            assert!(!name.starts_with('.'));
        }
        assert_ne!(cache.path_for("a"), cache.path_for("b"));
        assert_eq!(
            entry_name("https://en.wikipedia.org/w/index.php?search=Colorado+orogeny"),
            format!(
                "colorado-orogeny-{:032x}.json",
                fnv1a_128(b"https://en.wikipedia.org/w/index.php?search=Colorado+orogeny")
            )
        );
    }
}
