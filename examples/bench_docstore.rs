//! HTML → observation for the 77 KB article fixture, in both profiles.
//!
//! ```sh
//! cargo run --release --example bench_docstore
//! ```
//!
//! Prints the median and the 95th percentile of one search's parsing work: reading the page,
//! extracting the paragraphs, splitting the sentences and building the 5-sentence observation.

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

fn measure(label: &str, html: &str, profile: Profile) {
    // Warm up, then time many single runs.
    for _ in 0..50 {
        black_box(observation(black_box(html), profile));
    }
    let mut times: Vec<Duration> = (0..1000)
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
        "{label:<28} {profile:<8} {:>6.1} KB  median {:>7.1} µs  p95 {:>7.1} µs",
        html.len() as f64 / 1024.0,
        median.as_secs_f64() * 1e6,
        p95.as_secs_f64() * 1e6
    );
}

fn main() {
    for profile in [Profile::Paper, Profile::Default] {
        measure("article (Colorado orogeny)", ARTICLE, profile);
        measure("results (Colorado orogenyy)", RESULTS, profile);
    }
}
