//! The polite HTTP client and the on-disk page cache.
//!
//! [`Fetcher::fetch`] reads a URL's page under the caller's profile: from the body in the
//! [`PageCache`] when it can; otherwise it makes the request — at most `max_in_flight` at once
//! across every question, identical concurrent fetches (same URL, same profile) merged into one
//! and run on a task of their own (a search dropped mid-request, by Ctrl-C or a cancelled
//! question, leaves the fetch to finish and give its slot back), retried with exponential backoff
//! on 429, 5xx and transport failures (honouring `Retry-After` up to
//! [`HttpPolicy::max_retry_after`]; a longer one is an error that quotes it), the body read up to
//! [`HttpPolicy::max_body_bytes`] — and caches the body once the caller's [`PageCheck`] accepts
//! it: a page cut short is fetched again, never cached. A body is parsed once, on tokio's
//! blocking pool: the check judges the very reading the caller gets.
//! A server that cannot be reached at all (its name does not resolve, its connection is refused)
//! is not asked again: that fails at once, naming the offline docstores. Offline, a cache miss is
//! an error that names what is missing. Running out of file handles on a cache file is waited out
//! and retried.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backon::{ExponentialBuilder, Retryable};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use reqwest::StatusCode;
use serde::Deserialize;
use tokio::sync::{Semaphore, oneshot};

use super::html::parse_search_page;
use super::page::SearchOutcome;
use super::{DEFAULT_TIMEOUT, DocstoreConfig, DocstoreError};
use crate::base::digest::file_key;
use crate::base::fsutil::atomic_write;
use crate::base::http::{self, BodyError, LazyClient, RetryAfter, read_body, retry_after};
use crate::base::profile::Profile;

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
    /// The longest `Retry-After` honoured; a longer one ends the retries with an error quoting it.
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

/// A fetch under way is known by its URL and the profile that reads the page.
type FlightKey = (String, Profile);

/// A fetch several searches may wait on: the page as one profile reads it.
type SharedFetch = Shared<BoxFuture<'static, Result<Arc<SearchOutcome>, Arc<DocstoreError>>>>;

/// Whether a fetched body, as the caller's profile reads it, is the page the caller asked for
/// (for Wikipedia: a whole search page that reads as an article, results, no results or a
/// disambiguation page). Only bodies it accepts are cached; one it refuses (a page cut short, a
/// proxy's error page) is fetched again, then reported as [`DocstoreError::NotAPage`]. It runs on
/// a blocking thread, given the body and the reading the caller will get: it never parses again.
pub type PageCheck = fn(&str, &SearchOutcome) -> bool;

/// The shared HTTP client, cache and politeness limits. Cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<FetcherInner>,
}

struct FetcherInner {
    /// Built by the first request: serving from the cache never loads the TLS roots.
    client: LazyClient,
    cache: PageCache,
    offline: bool,
    policy: HttpPolicy,
    permits: Semaphore,
    in_flight: Mutex<HashMap<FlightKey, SharedFetch>>,
    requests: AtomicU64,
    pages_read: AtomicU64,
}

impl Fetcher {
    /// A fetcher for `config`. Nothing is built or opened yet: the HTTP client is built by the
    /// first request (a failure to build it is that request's error), the cache is read by the
    /// first fetch.
    pub fn new(config: &DocstoreConfig) -> Fetcher {
        let user_agent = config.user_agent.clone();
        let timeout = config.http.timeout;
        // A wiki URL's credentials go with every request as a header, so that no URL this
        // fetcher builds, caches or names in an error carries them (`DocstoreConfig::open_for`
        // strips them from the URL).
        let authorization = http::basic_auth_header(&config.wiki_url);
        let client = LazyClient::new(move || {
            let mut headers = reqwest::header::HeaderMap::new();
            if let Some(authorization) = &authorization {
                headers.insert(reqwest::header::AUTHORIZATION, authorization.clone());
            }
            reqwest::Client::builder()
                .user_agent(user_agent.clone())
                .default_headers(headers)
                .timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(10)))
                .redirect(reqwest::redirect::Policy::limited(10))
        });
        Fetcher {
            inner: Arc::new(FetcherInner {
                client,
                cache: PageCache::new(config.cache_dir()),
                offline: config.offline,
                policy: config.http.clone(),
                permits: Semaphore::new(config.http.max_in_flight.max(1)),
                in_flight: Mutex::new(HashMap::new()),
                requests: AtomicU64::new(0),
                pages_read: AtomicU64::new(0),
            }),
        }
    }

    /// Whether a request has built the HTTP client yet.
    pub fn client_built(&self) -> bool {
        self.inner.client.is_built()
    }

    pub fn cache(&self) -> &PageCache {
        &self.inner.cache
    }

    /// How many HTTP requests this fetcher has sent (retries included).
    pub fn requests_sent(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// How many bodies this fetcher has parsed (a cached page read, a fetched body read and
    /// checked): one per search, whether the page came from the cache or the network (a body the
    /// check refused, then fetched again, counts once per attempt).
    pub fn pages_read(&self) -> u64 {
        self.inner.pages_read.load(Ordering::Relaxed)
    }

    /// The page at `url` as `profile` reads it: from the cached body, else fetched, read once,
    /// checked with `check` on that reading, and cached. `query` names what was searched, for the
    /// offline error.
    pub async fn fetch(
        &self,
        url: &str,
        query: &str,
        profile: Profile,
        check: PageCheck,
    ) -> Result<SearchOutcome, DocstoreError> {
        if let Some(body) = self.inner.cache.get(url).await? {
            return self.inner.read_cached(url, body, profile).await;
        }
        if self.inner.offline {
            return Err(DocstoreError::NotCached {
                query: query.to_owned(),
                url: url.to_owned(),
                cache_dir: self.inner.cache.dir().to_owned(),
            });
        }
        let (flight, start) = {
            let mut in_flight = self
                .inner
                .in_flight
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let key = (url.to_owned(), profile);
            match in_flight.get(&key) {
                Some(flight) => (flight.clone(), None),
                None => {
                    let (sender, receiver) = oneshot::channel();
                    let stopped = format!("the fetch of {url} stopped before it ended");
                    let flight = async move {
                        receiver
                            .await
                            .unwrap_or_else(|_| Err(Arc::new(DocstoreError::Config(stopped))))
                    }
                    .boxed()
                    .shared();
                    in_flight.insert(key, flight.clone());
                    (flight, Some(sender))
                }
            }
        };
        if let Some(sender) = start {
            // The fetch runs on a task of its own, started once the map is unlocked: it ends
            // (giving back its request slot and leaving the map) even when every search waiting
            // on it has been dropped.
            let under_way = Flight {
                inner: self.inner.clone(),
                key: (url.to_owned(), profile),
            };
            tokio::spawn(async move {
                let url = &under_way.key.0;
                let result = under_way.inner.fetch_and_cache(url, profile, check).await;
                drop(under_way);
                // Nobody may be waiting any more: the page is cached all the same.
                let _ = sender.send(result.map_err(Arc::new));
            });
        }
        match flight.await {
            // The last search to take the page takes it whole; the others copy it.
            Ok(outcome) => Ok(Arc::try_unwrap(outcome).unwrap_or_else(|shared| (*shared).clone())),
            Err(error) => Err(Arc::try_unwrap(error).unwrap_or_else(DocstoreError::Shared)),
        }
    }
}

/// A fetch under way, on its own task: its URL leaves the in-flight map when the fetch ends,
/// whichever way it ends (a panic or the runtime shutting down included).
struct Flight {
    inner: Arc<FetcherInner>,
    key: FlightKey,
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.key);
    }
}

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug)]
enum AttemptError {
    Status {
        status: StatusCode,
        retry_after: Option<RetryAfter>,
    },
    /// No response, or a body cut short.
    Network(reqwest::Error),
    /// The server cannot be reached at all ([`http::unreachable`]): not asked again.
    Unreachable {
        reason: &'static str,
        source: reqwest::Error,
    },
    TooLarge,
    /// A body with nothing in it.
    Empty,
    /// A body the caller's [`PageCheck`] refused.
    NotAPage,
    /// The HTTP client could not be built.
    Client(reqwest::Error),
}

impl http::AttemptFailure for AttemptError {
    fn is_transient(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => crate::base::http::is_transient_status(*status),
            AttemptError::Network(error) => !error.is_builder() && !error.is_redirect(),
            AttemptError::Unreachable { .. }
            | AttemptError::TooLarge
            | AttemptError::Empty
            | AttemptError::Client(_) => false,
            AttemptError::NotAPage => true,
        }
    }

    fn retry_after(&self) -> Option<&RetryAfter> {
        match self {
            AttemptError::Status { retry_after, .. } => retry_after.as_ref(),
            _ => None,
        }
    }

    fn failure(&self) -> String {
        match self {
            AttemptError::Status { status, .. } => format!("HTTP {status}"),
            AttemptError::Network(error) => http::transport_failure(error).to_owned(),
            AttemptError::Unreachable { reason, .. } => (*reason).to_owned(),
            AttemptError::TooLarge => "page too large".to_owned(),
            AttemptError::Empty => "empty page".to_owned(),
            AttemptError::NotAPage => "not a whole search page".to_owned(),
            AttemptError::Client(_) => "cannot set up the HTTP client".to_owned(),
        }
    }
}

impl FetcherInner {
    /// Reads a cached body (checked when it was fetched, so read, not checked). Every page is
    /// read on tokio's blocking pool, whatever its size: a slow page never stalls the async
    /// workers other questions run on, and the document, parsed into owned data there, never
    /// lives across an await.
    async fn read_cached(
        &self,
        url: &str,
        body: Arc<str>,
        profile: Profile,
    ) -> Result<SearchOutcome, DocstoreError> {
        self.pages_read.fetch_add(1, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || parse_search_page(&body, profile))
            .await
            .map_err(|error| DocstoreError::Config(format!("parsing {url} failed: {error}")))
    }

    async fn fetch_and_cache(
        &self,
        url: &str,
        profile: Profile,
        check: PageCheck,
    ) -> Result<Arc<SearchOutcome>, DocstoreError> {
        // A flight that just landed may have cached it between our miss and this flight's start.
        if let Some(body) = self.cache.get(url).await? {
            return self.read_cached(url, body, profile).await.map(Arc::new);
        }
        let policy = &self.policy;
        let retry = http::RetryPolicy {
            max_retries: policy.max_retries,
            min_delay: policy.min_backoff,
            max_delay: policy.max_backoff,
            max_retry_after: policy.max_retry_after,
        };
        let server = format!("Wikipedia {}", http::server_name(url));
        let (bytes, outcome) = http::retry(&server, &retry, || self.attempt(url, profile, check))
            .await
            .map_err(|gave_up| match gave_up {
                http::GaveUp {
                    error: AttemptError::Status { status, .. },
                    wait_too_long: Some(asked),
                    ..
                } => DocstoreError::WaitTooLong {
                    url: url.to_owned(),
                    status: status.as_u16(),
                    asked: asked.asked,
                    max_wait_secs: policy.max_retry_after.as_secs(),
                },
                http::GaveUp { error, attempts, .. } => match error {
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
                    AttemptError::Unreachable { reason, source } => DocstoreError::Unreachable {
                        url: url.to_owned(),
                        host: http::server_name(url),
                        reason,
                        source,
                    },
                    AttemptError::TooLarge => DocstoreError::TooLarge {
                        url: url.to_owned(),
                        limit: policy.max_body_bytes,
                    },
                    AttemptError::Empty => DocstoreError::EmptyBody { url: url.to_owned() },
                    AttemptError::NotAPage => DocstoreError::NotAPage {
                        url: url.to_owned(),
                        attempts,
                    },
                    AttemptError::Client(source) => DocstoreError::Client(source),
                },
            })?;
        self.cache.put(url, &bytes).await?;
        Ok(Arc::new(outcome))
    }

    /// One request, holding one of the in-flight permits (not while backing off), then the one
    /// reading of what it brought, under `profile`, and the check of that reading. The response's
    /// bytes as they came (for the cache) and the page the caller gets.
    async fn attempt(
        &self,
        url: &str,
        profile: Profile,
        check: PageCheck,
    ) -> Result<(Vec<u8>, SearchOutcome), AttemptError> {
        let bytes = self.request(url).await?;
        let body = String::from_utf8_lossy(&bytes).into_owned();
        if body.trim().is_empty() {
            return Err(AttemptError::Empty);
        }
        self.pages_read.fetch_add(1, Ordering::Relaxed);
        let read = tokio::task::spawn_blocking(move || {
            let outcome = parse_search_page(&body, profile);
            check(&body, &outcome).then_some(outcome)
        });
        // A reading or a check that panics (neither should) refuses the page like a rejection.
        match read.await {
            Ok(Some(outcome)) => Ok((bytes, outcome)),
            Ok(None) | Err(_) => Err(AttemptError::NotAPage),
        }
    }

    async fn request(&self, url: &str) -> Result<Vec<u8>, AttemptError> {
        let _permit = self
            .permits
            .acquire()
            .await
            // invariant: nothing calls `close` on `permits`, so `acquire` cannot fail
            .expect("the semaphore is never closed");
        self.requests.fetch_add(1, Ordering::Relaxed);
        let client = self.client.get().map_err(AttemptError::Client)?;
        let response = client
            .get(url)
            .send()
            .await
            .map_err(|source| match http::unreachable(&source) {
                // The host is named; the URL, which may hold credentials, is not repeated.
                Some(reason) => AttemptError::Unreachable {
                    reason,
                    source: source.without_url(),
                },
                None => AttemptError::Network(source),
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(AttemptError::Status {
                status,
                retry_after: retry_after(response.headers()),
            });
        }
        read_body(response, self.policy.max_body_bytes)
            .await
            .map_err(|error| match error {
                BodyError::TooLarge => AttemptError::TooLarge,
                BodyError::Cut(error) => AttemptError::Network(error),
            })
    }
}

/// Raw response bodies on disk, keyed by URL, so both profiles share them.
///
/// Each entry is one file under `DIR/http/`, named by a hash of the URL (plus a short ASCII slug
/// for people browsing the directory): no query can name a path outside the directory. It holds
/// one header line, `react-docstore.page.v2 {fetched_at} {url}`, then the response body exactly
/// as the server sent it — no escaping to undo when a warm page is read. Entries written by
/// earlier versions (one JSON object `{"url", "fetched_at", "body"}`) are still read. Entries are
/// written to a temporary file and renamed into place, so a crash never leaves a torn entry; an
/// entry whose URL differs (a hash collision) or that cannot be read is a miss.
#[derive(Debug, Clone)]
pub struct PageCache {
    dir: PathBuf,
}

/// The first word of an entry's header line.
const ENTRY_FORMAT: &str = "react-docstore.page.v2";

/// An entry as versions before the raw format wrote it.
#[derive(Deserialize)]
struct JsonCacheEntry {
    url: String,
    body: String,
}

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
        let legacy = self.dir.join("http").join(legacy_entry_name(url));
        let mut bytes = None;
        for path in [self.path_for(url), legacy] {
            match retry_out_of_handles(|| tokio::fs::read(&path)).await {
                Ok(read) => {
                    bytes = Some((path, read));
                    break;
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(DocstoreError::Cache { path, source }),
            }
        }
        let Some((path, bytes)) = bytes else {
            return Ok(None);
        };
        match read_entry(&bytes) {
            Some((entry_url, body)) if entry_url == url => Ok(Some(body)),
            Some(_) => Ok(None),
            None => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable cache entry");
                Ok(None)
            }
        }
    }

    /// Stores `body`, the response's bytes as they came, under `url`.
    pub async fn put(&self, url: &str, body: &[u8]) -> Result<(), DocstoreError> {
        let path = self.path_for(url);
        // invariant: `path_for` joins a file name to the cache directory, so the path has a parent
        let dir = path.parent().expect("entries live in a directory").to_owned();
        let io = |source| DocstoreError::Cache {
            path: path.clone(),
            source,
        };
        tokio::fs::create_dir_all(&dir).await.map_err(io)?;
        let fetched_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let mut entry = format!("{ENTRY_FORMAT} {fetched_at} {url}\n").into_bytes();
        entry.extend_from_slice(body);
        let entry: Arc<[u8]> = Arc::from(entry);
        retry_out_of_handles(|| {
            let (path, entry) = (path.clone(), Arc::clone(&entry));
            async move {
                tokio::task::spawn_blocking(move || atomic_write(&path, &entry))
                    .await
                    .unwrap_or_else(|join| Err(std::io::Error::other(join)))
            }
        })
        .await
        .map_err(io)?;
        Ok(())
    }
}

/// The URL and body of a cache file: the raw format, or an earlier version's JSON.
fn read_entry(bytes: &[u8]) -> Option<(String, Arc<str>)> {
    if bytes.first() == Some(&b'{') {
        let entry: JsonCacheEntry = serde_json::from_slice(bytes).ok()?;
        return Some((entry.url, Arc::from(entry.body)));
    }
    let newline = memchr::memchr(b'\n', bytes)?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let mut fields = header.splitn(3, ' ');
    let (format, _fetched_at, url) = (fields.next()?, fields.next()?, fields.next()?);
    if format != ENTRY_FORMAT {
        return None;
    }
    let body = String::from_utf8_lossy(&bytes[newline + 1..]);
    Some((url.to_owned(), Arc::from(body.as_ref())))
}

/// Whether `error` says the process (EMFILE) or the system (ENFILE) has no file handle left: a
/// passing state under load, like a refused connection, not a broken cache.
fn is_out_of_handles(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// Runs a cache file operation, waiting out and retrying "too many open files" (a few times, with
/// backoff); any other error is returned at once.
async fn retry_out_of_handles<T, F, Fut>(operation: F) -> std::io::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::io::Result<T>>,
{
    operation
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(50))
                .with_max_delay(Duration::from_secs(2))
                .with_max_times(5)
                .with_jitter(),
        )
        .when(is_out_of_handles)
        .notify(|_, delay| {
            tracing::warn!(
                "page cache: too many open files; retrying in {:.1} s",
                delay.as_secs_f64()
            );
        })
        .await
}

/// `slug-hash.json`: the slug keeps ASCII letters, digits and `-` of the URL's last part; the
/// whole URL's [`file_key`] makes the name unique.
fn entry_name(url: &str) -> String {
    format!("{}-{}.json", slug(url), file_key(url.as_bytes()))
}

/// The name releases before SHA-256 naming gave an URL's entry (a 128-bit FNV-1a hash): read
/// when the entry is not under its name, so a page cache kept from then still serves its pages.
fn legacy_entry_name(url: &str) -> String {
    format!("{}-{:032x}.json", slug(url), fnv1a_128(url.as_bytes()))
}

/// The readable part of an entry's name: ASCII letters, digits and `-` of the URL's last part.
fn slug(url: &str) -> String {
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
    if slug.is_empty() { "page".to_owned() } else { slug }
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
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[tokio::test]
    async fn out_of_file_handles_is_retried_other_errors_are_not() {
        let calls = AtomicUsize::new(0);
        let result = retry_out_of_handles(|| async {
            match calls.fetch_add(1, Ordering::Relaxed) {
                0 => Err(std::io::Error::from_raw_os_error(libc::EMFILE)),
                1 => Err(std::io::Error::from_raw_os_error(libc::ENFILE)),
                _ => Ok("read"),
            }
        })
        .await;
        assert_eq!(result.unwrap(), "read");
        assert_eq!(calls.load(Ordering::Relaxed), 3);

        let calls = AtomicUsize::new(0);
        let result: std::io::Result<()> = retry_out_of_handles(|| async {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(std::io::Error::from_raw_os_error(libc::EACCES))
        })
        .await;
        assert_eq!(result.unwrap_err().raw_os_error(), Some(libc::EACCES));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn an_entry_under_its_name_before_sha256_naming_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PageCache::new(dir.path().to_owned());
        let url = "https://en.wikipedia.org/w/index.php?search=Colorado+orogeny";
        let body = "<html>kept</html>";
        std::fs::create_dir_all(dir.path().join("http")).unwrap();
        let entry = format!("{ENTRY_FORMAT} 2026-11-26T00:00:00Z {url}\n{body}");
        let legacy = dir.path().join("http").join(legacy_entry_name(url));
        std::fs::write(&legacy, &entry).unwrap();
        assert_eq!(cache.get(url).await.unwrap().as_deref(), Some(body));
        // Another URL's legacy name is no hit.
        assert_eq!(
            cache
                .get("https://en.wikipedia.org/w/index.php?search=Other")
                .await
                .unwrap(),
            None
        );
        // Under its name, the entry is read first.
        std::fs::write(cache.path_for(url), entry.replace("kept", "new")).unwrap();
        assert_eq!(cache.get(url).await.unwrap().as_deref(), Some("<html>new</html>"));
    }

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
        let url = "https://en.wikipedia.org/w/index.php?search=Colorado+orogeny";
        assert_eq!(
            entry_name(url),
            "colorado-orogeny-1771997895fe35697d4da55b61c48328a5ded31a608d8acce1077a7d75178879.json"
        );
        assert_eq!(
            legacy_entry_name(url),
            "colorado-orogeny-c1cb2d9b285746c21d43eb57487d3e00.json"
        );
    }
}
