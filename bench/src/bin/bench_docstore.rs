//! HTML → observation for the recorded article and results page, and for three pathological
//! pages (thousands of unclosed elements), in both profiles; then whole Wikipedia searches
//! through the fetcher against a loopback server serving the recorded article.
//!
//! ```sh
//! cargo run --release --bin bench_docstore
//! ```
//!
//! Prints the median and the 95th percentile of one search's parsing work: reading the page,
//! extracting the paragraphs, splitting the sentences and building the 5-sentence observation
//! (1,000 runs; 20 for the pathological pages). Then, per profile, the median wall time and the
//! mean CPU time (the whole process's, server included) of one search on a fresh page (fetched,
//! checked, cached, read: 300 distinct searches) and of the same searches again from the cache.

use std::hint::black_box;
use std::time::{Duration, Instant};

use react_docstore::base::profile::Profile;
use react_docstore::docstore::summary;
use react_docstore::docstore::{DocstoreConfig, SearchOutcome, parse_search_page};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const ARTICLE: &str = include_str!("../../../fixtures/wikipedia/colorado_orogeny_hit.html");
const RESULTS: &str = include_str!("../../../fixtures/wikipedia/colorado_orogenyy_similar.html");

fn observation(html: &str, profile: Profile) -> String {
    match parse_search_page(html, profile) {
        SearchOutcome::Article(page) => summary(&page.sentences(profile)),
        SearchOutcome::Results(titles) => titles.join(", "),
        other => format!("{other:?}"),
    }
}

fn measure(label: &str, html: &str, profile: Profile, runs: usize) {
    // Warm up, then time many single runs.
    for _ in 0..runs.min(50) {
        black_box(observation(black_box(html), profile));
    }
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(observation(black_box(html), profile));
            start.elapsed()
        })
        .collect();
    times.sort();
    let median = times[times.len() / 2];
    let p95 = times[times.len() * 95 / 100];
    println!(
        "{label:<36} {profile:<8} {:>7.1} KB  median {:>9.1} µs  p95 {:>9.1} µs",
        html.len() as f64 / 1024.0,
        median.as_secs_f64() * 1e6,
        p95.as_secs_f64() * 1e6
    );
}

/// The process's CPU time so far (user and system, every thread).
fn cpu_time() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; RUSAGE_SELF is a valid target.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// `n_searches` distinct searches, each answered with the recorded article: first fresh (fetched,
/// checked and cached), then again from the cache.
async fn measure_searches(server: &MockServer, profile: Profile, n_searches: usize) {
    let cache = tempfile::tempdir().expect("a temporary directory");
    let config = DocstoreConfig {
        wiki_url: server.uri(),
        cache_dir: Some(cache.path().to_owned()),
        ..DocstoreConfig::new(profile)
    };
    let source = config.open().expect("the docstore opens");
    for pass in ["fresh page", "cached page"] {
        let mut times = Vec::with_capacity(n_searches);
        let cpu_start = cpu_time();
        for idx in 0..n_searches {
            let mut docstore = source.open(&[]);
            let start = Instant::now();
            let observation = docstore
                .search(&format!("Colorado orogeny {idx}"))
                .await
                .expect("the search answers");
            times.push(start.elapsed());
            black_box(observation);
        }
        let cpu = (cpu_time() - cpu_start) / n_searches as u32;
        times.sort();
        println!(
            "search, {pass:<28} {profile:<8} median {:>9.1} µs  p95 {:>9.1} µs  CPU {:>9.1} µs",
            times[times.len() / 2].as_secs_f64() * 1e6,
            times[times.len() * 95 / 100].as_secs_f64() * 1e6,
            cpu.as_secs_f64() * 1e6
        );
    }
}

fn main() {
    let paragraphs = "<p>word word word ".repeat(20_000);
    let headings = "<div class=\"mw-search-result-heading\"><a>Title</a> words ".repeat(16_000);
    let stray = format!("{}x y z{}", "<span>".repeat(50_000), "</p>".repeat(50_000));
    for profile in [Profile::Paper, Profile::Default] {
        measure("article (Colorado orogeny)", ARTICLE, profile, 1000);
        measure("results (Colorado orogenyy)", RESULTS, profile, 1000);
        measure("20,000 unclosed <p>", &paragraphs, profile, 20);
        measure("16,000 unclosed result headings", &headings, profile, 20);
        measure("50,000 <span> + 50,000 stray </p>", &stray, profile, 20);
    }

    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(ARTICLE.as_bytes().to_vec(), "text/html"))
            .mount(&server)
            .await;
        for profile in [Profile::Paper, Profile::Default] {
            measure_searches(&server, profile, 300).await;
        }
    });
}
