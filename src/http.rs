//! What every HTTP client here (model, Wikipedia, web search) reads the same way: `Retry-After`.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// How long the server asks us to wait: `retry-after-ms` (some OpenAI-compatible servers), else
/// `Retry-After` as seconds (fractions allowed) or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let seconds = |value: &str| {
        let seconds = value.parse::<f64>().ok()?;
        (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
    };
    if let Some(delay) = header("retry-after-ms").and_then(seconds) {
        return Some(delay / 1000);
    }
    let value = header("retry-after")?;
    if let Some(delay) = seconds(value) {
        return Some(delay);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(headers: &[(&'static str, &str)], expected: Option<Duration>) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        assert_eq!(retry_after(&map), expected, "{headers:?}");
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        check(&[], None);
        check(&[("retry-after", "3")], Some(Duration::from_secs(3)));
        check(&[("retry-after", " 1.5 ")], Some(Duration::from_millis(1500)));
        check(
            &[("retry-after-ms", "250"), ("retry-after", "9")],
            Some(Duration::from_millis(250)),
        );
        check(&[("retry-after", "-1")], None);
        check(&[("retry-after", "soon")], None);
        check(
            &[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
            Some(Duration::ZERO),
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let delay = {
            let mut map = HeaderMap::new();
            map.insert("retry-after", later.parse().unwrap());
            retry_after(&map).unwrap()
        };
        assert!(
            delay > Duration::from_secs(100) && delay <= Duration::from_secs(120),
            "{delay:?}"
        );
    }
}
