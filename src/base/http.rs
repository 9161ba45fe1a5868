//! What every HTTP client here (model, Wikipedia, web search) does the same way: the retry loop
//! ([`retry`]: backoff, `Retry-After` within its cap, the warning), reading a body under a size
//! limit, and building the reqwest client only when the first request needs it.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::base::text::shorten;

use backon::{BackoffBuilder, ExponentialBuilder};
use reqwest::header::HeaderMap;

/// How transient failures are retried: exponential backoff with jitter, and the longest
/// `Retry-After` honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: usize,
    /// The first backoff delay; it doubles each retry, with jitter.
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this ends the retries at once, with an error quoting it.
    pub max_retry_after: Duration,
}

/// What the retry loop needs to know of a failed attempt.
pub(crate) trait AttemptFailure {
    /// Whether another attempt may succeed.
    fn is_transient(&self) -> bool;
    /// How long the server asked to wait before the next attempt.
    fn retry_after(&self) -> Option<&RetryAfter>;
    /// What failed, in a few words, for the retry warning: `HTTP 429 Too Many Requests`, `timed out`.
    fn failure(&self) -> String;
}

/// Why [`retry`] gave up: the last attempt's error, and what the client's error needs to say.
#[derive(Debug)]
pub(crate) struct GaveUp<E> {
    pub error: E,
    /// Attempts made, the last one included.
    pub attempts: usize,
    /// The server asked to wait longer than [`RetryPolicy::max_retry_after`]: that ended the retries.
    pub wait_too_long: Option<RetryAfter>,
}

/// Runs `attempt` until it succeeds, fails for good, asks to wait too long or the retries are
/// spent, waiting the backoff's delay (or the server's `Retry-After`, when longer) in between and
/// warning about each retry as coming from `server` (`model server 127.0.0.1:8080`).
pub(crate) async fn retry<T, E, Fut>(
    server: &str,
    policy: &RetryPolicy,
    mut attempt: impl FnMut() -> Fut,
) -> Result<T, GaveUp<E>>
where
    E: AttemptFailure,
    Fut: Future<Output = Result<T, E>>,
{
    let mut backoff = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay)
        .with_max_times(policy.max_retries)
        .with_jitter()
        .build();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let gave_up = |error, wait_too_long| GaveUp {
            error,
            attempts,
            wait_too_long,
        };
        if !error.is_transient() {
            return Err(gave_up(error, None));
        }
        let asked = error.retry_after();
        let Some(delay) = next_delay(backoff.next(), asked, policy.max_retry_after) else {
            let wait_too_long = asked.filter(|asked| asked.wait > policy.max_retry_after).cloned();
            return Err(gave_up(error, wait_too_long));
        };
        warn_retry(
            server,
            &error.failure(),
            delay,
            attempts + 1,
            policy.max_retries + 1,
        );
        tokio::time::sleep(delay).await;
    }
}

/// How long the server asked us to wait, and its own words for it (for the error that says we
/// will not wait that long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryAfter {
    /// Saturated: a wait too long for a `Duration` is `Duration::MAX`.
    pub wait: Duration,
    /// `30 s`, `1e30 ms`, `120 s (until Wed, 21 Oct 2026 07:28:00 GMT)`; a few dozen characters
    /// at most.
    pub asked: String,
}

/// The longest server value an error quotes.
const MAX_ASKED_CHARS: usize = 40;

/// `retry-after-ms` (some OpenAI-compatible servers), else `Retry-After` as seconds (fractions and
/// exponents allowed) or as an HTTP date. Negative, NaN, infinite and unreadable values are
/// ignored; a value too large for a `Duration` waits forever (and so ends the retries).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<RetryAfter> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(value) = header("retry-after-ms")
        && let Some(wait) = wait_for(value, 1e-3)
    {
        return Some(RetryAfter {
            wait,
            asked: format!("{} ms", shorten(value, MAX_ASKED_CHARS)),
        });
    }
    let value = header("retry-after")?;
    if let Some(wait) = wait_for(value, 1.0) {
        return Some(RetryAfter {
            wait,
            asked: format!("{} s", shorten(value, MAX_ASKED_CHARS)),
        });
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let wait = when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO);
    Some(RetryAfter {
        wait,
        asked: format!("{} s (until {value})", wait.as_secs()),
    })
}

/// `value` units of `unit_secs` seconds, when `value` is a finite, non-negative number.
fn wait_for(value: &str, unit_secs: f64) -> Option<Duration> {
    let amount = value.parse::<f64>().ok()?;
    // A number too large for an f64 parses as infinity; the words `inf` and `infinity` are not
    // numbers a server means.
    let numeral = value.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    if amount.is_nan() || amount < 0.0 || (amount.is_infinite() && !numeral) {
        return None;
    }
    Some(Duration::try_from_secs_f64(amount * unit_secs).unwrap_or(Duration::MAX))
}

/// Whether an HTTP status is worth asking again, for every client: 408, 429 and 5xx, but not 501
/// (the server does not implement the request: asking again gets the same answer).
pub(crate) fn is_transient_status(status: reqwest::StatusCode) -> bool {
    use reqwest::StatusCode;
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || (status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED)
}

/// The delay before the next attempt: the backoff's, or longer when the server asks for longer.
/// `None` (give up now) when the backoff is spent or the server asks for more than `cap`.
fn next_delay(
    backoff: Option<Duration>,
    retry_after: Option<&RetryAfter>,
    cap: Duration,
) -> Option<Duration> {
    match retry_after {
        Some(asked) if asked.wait > cap => None,
        Some(asked) => backoff.map(|delay| delay.max(asked.wait)),
        None => backoff,
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Larger than the limit: by its `Content-Length`, or as it streamed in.
    TooLarge,
    /// The connection failed while the body streamed in (dropped, reset, timed out).
    Cut(reqwest::Error),
}

/// The whole body of `response`, refusing more than `limit` bytes: a `Content-Length` over the
/// limit is refused before anything is read, and the stream is cut off as soon as it passes it.
pub(crate) async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let capacity = announced.map_or(0, |length| usize::try_from(length).unwrap_or(limit));
    let mut body = Vec::with_capacity(capacity.min(limit));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| BodyError::Cut(error.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `host` or `host:port` of `url`: never a user name, password, path or query.
pub(crate) fn server_name(url: &str) -> String {
    let Ok(url) = reqwest::Url::parse(url) else {
        return "an unparsable URL".to_owned();
    };
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => "a URL without a host".to_owned(),
    }
}

/// The endpoint `url` names, as the reply cache keys a server: scheme, host, port and path, with
/// no user, password, query or fragment (two models behind one gateway differ by their path).
pub(crate) fn endpoint(url: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(url) else {
        return "an unparsable URL".to_owned();
    };
    // Setting these fails only on URLs that cannot have them (`data:`), which keep none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// `url` without the user name and password it may carry (`http://user:pass@host/v1` →
/// `http://host/v1`): all that a message, a log line, a cache key or a record shows of a URL the
/// user gave. Read as text, so that a URL that does not parse (`htp://user:pass@host`) is stripped
/// too; everything else is kept as written.
pub(crate) fn without_credentials(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |idx| authority_start + idx);
    match url[authority_start..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..authority_start], &url[authority_start + at + 1..]),
        None => url.to_owned(),
    }
}

/// The user name and password `url` carries as an HTTP basic `Authorization` header, marked
/// sensitive (never in a `Debug` output): for a client that sends them with every request while
/// the URLs it builds, shows and caches carry none ([`without_credentials`]). `None` when the URL
/// carries none.
pub(crate) fn basic_auth_header(url: &str) -> Option<reqwest::header::HeaderValue> {
    use base64::Engine;
    let url = reqwest::Url::parse(url).ok()?;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(url.username()),
        decode(url.password().unwrap_or_default())
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut header = reqwest::header::HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
    header.set_sensitive(true);
    Some(header)
}

/// What went wrong with a request, in a few plain words: `timed out`, `connection refused`,
/// `connection reset`, `connection dropped mid-body`.
pub(crate) fn transport_failure(error: &reqwest::Error) -> &'static str {
    let named = io_causes(error).find_map(|kind| match kind {
        std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
        std::io::ErrorKind::ConnectionReset => Some("connection reset"),
        std::io::ErrorKind::ConnectionAborted => Some("connection aborted"),
        std::io::ErrorKind::TimedOut => Some("timed out"),
        _ => None,
    });
    if let Some(named) = named {
        named
    } else if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else if error.is_body() || error.is_decode() {
        "connection dropped mid-body"
    } else if error.is_request() {
        "connection closed before the response"
    } else {
        "request failed"
    }
}

/// Why the server cannot be reached at all, when that is why `error` failed: its name does not
/// resolve (no network, no DNS, a mistyped host), or nothing answers at its address. Retrying
/// soon gets the same answer: a client fails at once, saying so.
pub(crate) fn unreachable(error: &reqwest::Error) -> Option<&'static str> {
    if error.is_dns() {
        return Some("its name does not resolve");
    }
    io_causes(error).find_map(|kind| match kind {
        std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
        std::io::ErrorKind::NetworkUnreachable => Some("network unreachable"),
        std::io::ErrorKind::HostUnreachable => Some("host unreachable"),
        _ => None,
    })
}

/// Whether `error` is a connection refused by a server on this machine or its private network:
/// `localhost`, or a loopback, private (10/8, 172.16/12, 192.168/16), link-local or unique-local
/// address. Nothing listens there, and nothing will in the seconds retries wait: a client fails at
/// once. A remote host's refusal may be a server restarting behind its address: that is retried.
/// A name that resolves to a private address is not known here to be one, and is retried.
pub(crate) fn refused_nearby(error: &reqwest::Error, url: &reqwest::Url) -> bool {
    io_causes(error).any(|kind| kind == std::io::ErrorKind::ConnectionRefused) && is_nearby(url)
}

/// Whether `url`'s host is this machine or an address of a private network.
fn is_nearby(url: &reqwest::Url) -> bool {
    use std::net::Ipv4Addr;
    let nearby_v4 =
        |ip: Ipv4Addr| ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified();
    match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => nearby_v4(ip),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
                || ip.to_ipv4_mapped().is_some_and(nearby_v4)
        }
        None => false,
    }
}

/// The kinds of the I/O errors in `error`'s chain of causes, outermost first.
fn io_causes(error: &reqwest::Error) -> impl Iterator<Item = std::io::ErrorKind> + '_ {
    std::iter::successors(std::error::Error::source(error), |cause| cause.source())
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>().map(std::io::Error::kind))
}

/// Logs that an attempt failed and when the next one starts, in plain words:
/// `model server 127.0.0.1:8080: HTTP 429 Too Many Requests; retrying in 2.1 s, attempt 2 of 5`.
/// `attempt` is the number of the attempt about to be made.
fn warn_retry(server: &str, failure: &dyn fmt::Display, delay: Duration, attempt: usize, of: usize) {
    tracing::warn!(
        "{server}: {failure}; retrying in {:.1} s, attempt {attempt} of {of}",
        delay.as_secs_f64()
    );
}

/// A reqwest client built when the first request needs it, not when its owner is made: replaying
/// recorded runs and offline exploring never pay for loading the system's TLS roots. A build
/// that fails is reported to that request and tried again by the next.
pub(crate) struct LazyClient {
    client: OnceLock<reqwest::Client>,
    builder: Box<dyn Fn() -> reqwest::ClientBuilder + Send + Sync>,
}

/// Installs the process's TLS crypto provider, which every `reqwest` client needs before it is
/// built: reqwest is built without one of its own (`rustls-no-provider`), and ring is ours,
/// compiled in seconds where aws-lc's C build took over two minutes of every cold CI build.
/// Installing again, or after another provider, does nothing, which is as good. (A program of
/// its own building a client — a test, a benchmark — installs ring the same way.)
pub(crate) fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl LazyClient {
    pub(crate) fn new(builder: impl Fn() -> reqwest::ClientBuilder + Send + Sync + 'static) -> LazyClient {
        LazyClient {
            client: OnceLock::new(),
            builder: Box::new(builder),
        }
    }

    /// The client, built now if this is the first request.
    pub(crate) fn get(&self) -> Result<&reqwest::Client, reqwest::Error> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        install_crypto_provider();
        let client = (self.builder)().build()?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Whether a request has built the client yet.
    pub(crate) fn is_built(&self) -> bool {
        self.client.get().is_some()
    }
}

impl fmt::Debug for LazyClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyClient")
            .field("built", &self.is_built())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_builds_with_the_ring_crypto_provider() {
        // reqwest has no provider of its own (`rustls-no-provider`): without ours it panics.
        let client = LazyClient::new(reqwest::Client::builder);
        assert!(client.get().is_ok());
        assert!(client.is_built());
    }

    fn parse(headers: &[(&'static str, &str)]) -> Option<RetryAfter> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        retry_after(&map)
    }

    #[track_caller]
    fn check(headers: &[(&'static str, &str)], expected: Option<(Duration, &str)>) {
        let expected = expected.map(|(wait, asked)| RetryAfter {
            wait,
            asked: asked.to_owned(),
        });
        assert_eq!(parse(headers), expected, "{headers:?}");
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        check(&[], None);
        check(&[("retry-after", "3")], Some((Duration::from_secs(3), "3 s")));
        check(
            &[("retry-after", " 1.5 ")],
            Some((Duration::from_millis(1500), "1.5 s")),
        );
        check(
            &[("retry-after-ms", "250"), ("retry-after", "9")],
            Some((Duration::from_millis(250), "250 ms")),
        );
        check(
            &[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
            Some((Duration::ZERO, "0 s (until Wed, 21 Oct 2015 07:28:00 GMT)")),
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let delay = parse(&[("retry-after", &later)]).unwrap().wait;
        assert!(
            delay > Duration::from_secs(100) && delay <= Duration::from_secs(120),
            "{delay:?}"
        );
    }

    #[test]
    fn retry_after_out_of_range_saturates_or_is_ignored() {
        // Too large for a Duration: a wait no client accepts, never a panic.
        check(&[("retry-after", "1e30")], Some((Duration::MAX, "1e30 s")));
        check(&[("retry-after-ms", "1e30")], Some((Duration::MAX, "1e30 ms")));
        check(
            &[("retry-after", "18446744073709551616")],
            Some((Duration::MAX, "18446744073709551616 s")),
        );
        check(
            &[("retry-after-ms", "18446744073709551616000")],
            Some((Duration::MAX, "18446744073709551616000 ms")),
        );
        // Negative, NaN, infinite, garbage: as if the header were absent.
        for value in [
            "-1", "-0.5", "NaN", "nan", "inf", "-inf", "infinity", "soon", "", "1 s", "0x10",
        ] {
            check(&[("retry-after", value)], None);
            check(&[("retry-after-ms", value)], None);
        }
        // An unreadable retry-after-ms falls back to Retry-After.
        check(
            &[("retry-after-ms", "NaN"), ("retry-after", "2")],
            Some((Duration::from_secs(2), "2 s")),
        );
        let far = parse(&[("retry-after", "Wed, 01 Jan 9000 00:00:00 GMT")]).unwrap();
        assert!(far.wait > Duration::from_secs(200 * 365 * 24 * 3600), "{far:?}");
        assert!(
            far.asked.ends_with(" s (until Wed, 01 Jan 9000 00:00:00 GMT)"),
            "{far:?}"
        );
        // A long value is quoted shortened.
        let digits = "9".repeat(500);
        let long = parse(&[("retry-after", &digits)]).unwrap();
        assert_eq!(long.wait, Duration::MAX);
        assert_eq!(long.asked, format!("{}… s", "9".repeat(MAX_ASKED_CHARS)));
    }

    #[test]
    fn next_delay_honours_retry_after_up_to_the_cap() {
        let cap = Duration::from_secs(120);
        let asked = |secs: u64| RetryAfter {
            wait: Duration::from_secs(secs),
            asked: format!("{secs} s"),
        };
        let backoff = Some(Duration::from_secs(2));
        assert_eq!(next_delay(backoff, None, cap), backoff);
        assert_eq!(next_delay(None, None, cap), None);
        assert_eq!(next_delay(backoff, Some(&asked(1)), cap), backoff);
        assert_eq!(
            next_delay(backoff, Some(&asked(30)), cap),
            Some(Duration::from_secs(30))
        );
        assert_eq!(next_delay(backoff, Some(&asked(121)), cap), None);
        assert_eq!(next_delay(None, Some(&asked(30)), cap), None);
        let forever = RetryAfter {
            wait: Duration::MAX,
            asked: "1e30 s".to_owned(),
        };
        assert_eq!(next_delay(backoff, Some(&forever), cap), None);
    }

    #[test]
    fn nearby_hosts_are_this_machine_and_private_networks() {
        #[track_caller]
        fn check(url: &str, nearby: bool) {
            assert_eq!(is_nearby(&reqwest::Url::parse(url).unwrap()), nearby, "{url}");
        }
        for url in [
            "http://127.0.0.1:9/v1",
            "http://127.1.2.3/v1",
            "http://localhost:8080/v1",
            "http://LocalHost./v1",
            "http://vllm.localhost/v1",
            "http://10.0.0.5:8000/v1",
            "http://172.16.1.1/v1",
            "http://192.168.1.20:11434/v1",
            "http://169.254.1.1/v1",
            "http://0.0.0.0:8000/v1",
            "http://[::1]:8000/v1",
            "http://[fd00::1]/v1",
            "http://[fe80::1]/v1",
            "http://[::ffff:192.168.0.1]/v1",
        ] {
            check(url, true);
        }
        for url in [
            "https://api.openai.com/v1",
            "http://8.8.8.8/v1",
            "http://172.32.0.1/v1",
            "http://[2001:db8::1]/v1",
            "http://localhost.example.com/v1",
            "http://vllm:8000/v1",
        ] {
            check(url, false);
        }
    }

    #[test]
    fn endpoints_keep_the_path_and_carry_no_credentials() {
        assert_eq!(
            endpoint("https://user:pass@gateway.example.com:8443/providerA/v1/chat/completions?key=1#x"),
            "https://gateway.example.com:8443/providerA/v1/chat/completions"
        );
        assert_ne!(
            endpoint("http://gateway/providerA/v1/completions"),
            endpoint("http://gateway/providerB/v1/completions")
        );
    }

    #[test]
    fn credentials_are_stripped_from_any_url() {
        #[track_caller]
        fn check(url: &str, shown: &str) {
            assert_eq!(without_credentials(url), shown, "{url}");
        }
        check("http://user:pass@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1");
        check("https://token@host/v1?q=a@b", "https://host/v1?q=a@b");
        check("htp://user:p@ss@host", "htp://host");
        check("ftp://u:p@example.com/v1", "ftp://example.com/v1");
        check("http://host/path@x", "http://host/path@x");
        check("http://host", "http://host");
        check("not a url", "not a url");
        let header = basic_auth_header("http://wiki:p%40ss@host/").unwrap();
        assert!(header.is_sensitive());
        // `wiki:p@ss`
        assert_eq!(header.to_str().unwrap(), "Basic d2lraTpwQHNz");
        assert!(basic_auth_header("http://host/").is_none());
    }

    #[test]
    fn server_names_carry_no_credentials() {
        assert_eq!(
            server_name("https://user:pass@api.example.com/v1/chat?key=1"),
            "api.example.com"
        );
        assert_eq!(server_name("http://127.0.0.1:8080/v1"), "127.0.0.1:8080");
        assert_eq!(server_name("not a url"), "an unparsable URL");
    }
}
