//! HTML → observation for the recorded article and results page, and for three pathological
//! pages (thousands of unclosed elements), in both profiles.
//!
//! ```sh
//! cargo run --release --example bench_docstore
//! ```
//!
//! Prints the median and the 95th percentile of one search's parsing work: reading the page,
//! extracting the paragraphs, splitting the sentences and building the 5-sentence observation
//! (1,000 runs; 20 for the pathological pages).

use std::hint::black_box;
use std::time::{Duration, Instant};

use react_docstore::Profile;
use react_docstore::docstore::page::summary;
use react_docstore::docstore::{SearchOutcome, parse_search_page};

const ARTICLE: &str = include_str!("../fixtures/wikipedia/colorado_orogeny_hit.html");
const RESULTS: &str = include_str!("../fixtures/wikipedia/colorado_orogenyy_similar.html");

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
}
