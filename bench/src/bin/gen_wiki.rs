//! A synthetic Wikipedia in the HotpotQA abstracts format, for index benchmarks.
//!
//! ```sh
//! cargo run --release --bin gen_wiki -- --pages 200000 --out /tmp/wiki-200k.jsonl \
//!     --queries /tmp/wiki-200k.queries.tsv --seed 1
//! ```
//!
//! Writes one JSON object a line, shaped like a line of the HotpotQA processed-Wikipedia
//! abstracts (`enwiki-20171001-pages-meta-current-withlinks-abstracts/*/wiki_*.bz2`, uncompressed):
//! `id`, `url`, `title`, `text` (sentences; every sentence but the first starts with a space),
//! `charoffset` (token offsets, relative to each sentence), `text_with_links` (the same sentences
//! with `<a href="Percent%20Encoded">Title</a>` links to other generated pages) and
//! `charoffset_with_links` (a link's opening and closing tags are one token each).
//!
//! A page has 20–120 words (about 60) in 3–6 sentences, drawn Zipf-distributed (s = 1.07) from a
//! vocabulary of pseudo-words whose most frequent ranks are real English function words; the
//! first sentence starts with the title. The vocabulary grows with the dump as Heaps' law says
//! (V = 44 · T^0.49 for T words of text, the constants Manning, Raghavan and Schütze measure on
//! Reuters-RCV1): 131,000 words for 200,000 pages, 289,000 for 1,000,000, 650,000 for 5,233,330.
//!
//! Titles are unique, 1–4 capitalised words drawn from the same Zipf distribution as the text:
//! as on Wikipedia, a title word is often among the most frequent words of the dump ("The",
//! "of", "River", "Album"), so a title word's postings are long. The queries file
//! (`query<TAB>expected title`) alternates exact titles and titles with one letter dropped from
//! their first word (a word of 2 letters or more; any letter); a typo that happens to spell
//! another title (ignoring case) is redrawn.
//!
//! Deterministic for a given `--seed` (SplitMix64). Only the title list stays in memory; pages
//! are streamed to the output.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use react_docstore::base::rng::SplitMix64;

use bench::hotpot_jsonl::{Sentence, write_page};

const USAGE: &str = "usage: gen_wiki --out FILE [--pages N (200000)] [--queries FILE] \
                     [--num-queries N (2000)] [--seed N (1)] [--vocabulary N (Heaps' law)]";

const ZIPF_S: f64 = 1.07;
/// Words of text a page holds on average (what Heaps' law counts).
const WORDS_PER_PAGE: f64 = 62.0;
/// Heaps' law, V = K · T^β (Manning, Raghavan and Schütze, Introduction to Information
/// Retrieval, 5.1.1: K = 44, β = 0.49 on Reuters-RCV1).
const HEAPS_K: f64 = 44.0;
const HEAPS_BETA: f64 = 0.49;
/// The most frequent ranks of the vocabulary, so that stop-word lists behave as on real text.
const FUNCTION_WORDS: &[&str] = &[
    "the", "of", "and", "in", "a", "is", "to", "was", "for", "by", "on", "as", "with", "his", "at", "from",
    "that", "an", "which", "it", "her", "are", "were", "who",
];
const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch",
    "dr", "gr", "kr", "pl", "st", "th", "tr", "sh",
];
const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "y", "io"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "l", "m", "th", "nd", "rk", "st", "x"];
/// Probability that a body word slot holds a link to another page instead.
const LINK_RATE: f64 = 0.04;
/// Probability of a comma after a body word.
const COMMA_RATE: f64 = 0.07;

struct Args {
    pages: usize,
    out: PathBuf,
    queries: Option<PathBuf>,
    num_queries: usize,
    seed: u64,
    vocabulary: Option<usize>,
}

fn parse_number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: not a number: {value}\n{USAGE}"))
}

fn parse_args() -> Result<Args, String> {
    let mut pages: usize = 200_000;
    let mut out: Option<PathBuf> = None;
    let mut queries: Option<PathBuf> = None;
    let mut num_queries: usize = 2_000;
    let mut seed: u64 = 1;
    let mut vocabulary: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_string());
        }
        let Some(value) = args.next() else {
            return Err(format!("{flag} needs a value\n{USAGE}"));
        };
        match flag.as_str() {
            "--pages" => pages = parse_number(&flag, &value)?,
            "--out" => out = Some(PathBuf::from(value)),
            "--queries" => queries = Some(PathBuf::from(value)),
            "--num-queries" => num_queries = parse_number(&flag, &value)?,
            "--seed" => seed = parse_number(&flag, &value)?,
            "--vocabulary" => vocabulary = Some(parse_number(&flag, &value)?),
            _ => return Err(format!("unknown argument {flag}\n{USAGE}")),
        }
    }
    let Some(out) = out else {
        return Err(format!("--out is required\n{USAGE}"));
    };
    if pages < 2 {
        return Err(format!(
            "--pages must be at least 2 (pages link to each other)\n{USAGE}"
        ));
    }
    Ok(Args {
        pages,
        out,
        queries,
        num_queries,
        seed,
        vocabulary,
    })
}

/// One of `items`, uniformly.
fn pick(rng: &mut SplitMix64, items: &[&'static str]) -> &'static str {
    items[rng.below(items.len())]
}

/// Inverse-CDF sampling of Zipf ranks (0-based) over `n` items.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n);
        let mut total = 0.0_f64;
        for rank in 1..=n {
            total += (rank as f64).powf(-s);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Self { cdf }
    }

    fn sample(&self, rng: &mut SplitMix64) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1)
    }
}

/// The vocabulary of a dump of `pages` pages, by Heaps' law.
fn heaps_vocabulary(pages: usize) -> usize {
    let words = pages as f64 * WORDS_PER_PAGE;
    ((HEAPS_K * words.powf(HEAPS_BETA)) as usize).max(FUNCTION_WORDS.len() + 1_000)
}

/// The function words, then unique pseudo-words; frequent ranks are short, rare ones longer.
fn vocabulary(size: usize, rng: &mut SplitMix64) -> Vec<String> {
    let mut words: Vec<String> = FUNCTION_WORDS.iter().map(|w| String::from(*w)).collect();
    let mut seen: HashSet<String> = words.iter().cloned().collect();
    while words.len() < size {
        let rank = words.len();
        let syllables = 1 + usize::from(rank > 200) + rng.below(2);
        let mut word = String::with_capacity(12);
        for _ in 0..syllables {
            word.push_str(pick(rng, ONSETS));
            word.push_str(pick(rng, NUCLEI));
        }
        word.push_str(pick(rng, CODAS));
        if seen.insert(word.clone()) {
            words.push(word);
        }
    }
    words
}

fn push_capitalised(out: &mut String, word: &str) {
    let mut chars = word.chars();
    if let Some(first) = chars.next() {
        out.push(first.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

/// A title of `len` words drawn from the text's Zipf distribution.
fn make_title(len: usize, words: &[String], zipf: &Zipf, rng: &mut SplitMix64) -> String {
    let mut title = String::with_capacity(len * 9);
    for i in 0..len {
        if i > 0 {
            title.push(' ');
        }
        push_capitalised(&mut title, &words[zipf.sample(rng)]);
    }
    title
}

/// `n` unique titles of 1–4 words. A title that already exists is redrawn, one word longer
/// every few tries, so uniqueness never depends on luck.
fn make_titles(n: usize, words: &[String], zipf: &Zipf, rng: &mut SplitMix64) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut len = match rng.below(100) {
            0..15 => 1,
            15..60 => 2,
            60..88 => 3,
            _ => 4,
        };
        let mut attempts: u32 = 0;
        loop {
            let title = make_title(len, words, zipf, rng);
            if seen.insert(title.clone()) {
                out.push(title);
                break;
            }
            attempts += 1;
            if attempts.is_multiple_of(4) {
                len += 1;
            }
        }
    }
    out
}

struct Corpus {
    words: Vec<String>,
    zipf: Zipf,
    titles: Vec<String>,
}

/// Generates page `page`'s sentences into `pool`; returns how many it used.
fn fill_page(rng: &mut SplitMix64, corpus: &Corpus, page: usize, pool: &mut Vec<Sentence>) -> usize {
    let title = &corpus.titles[page];
    let title_words = title.split(' ').count();
    let extra = if rng.below(5) == 0 { rng.below(21) } else { 0 };
    let total = 20 + rng.below(41) + rng.below(41) + extra; // 20..=120, about 62
    let sentences = (3 + rng.below(4)).min(total / 6); // 3..=6
    let mut left = total;
    let mut capitalised = String::new();
    for k in 0..sentences {
        let remaining = sentences - k;
        // Invariant: left >= 4 * remaining, so every sentence gets 4 words or more.
        let mut len = if remaining == 1 {
            left
        } else {
            let jitter = rng.below(5);
            (left / remaining + jitter)
                .saturating_sub(2)
                .clamp(4, left - 4 * (remaining - 1))
        };
        left -= len;
        if pool.len() == k {
            pool.push(Sentence::default());
        }
        let s = &mut pool[k];
        s.clear();
        if k == 0 {
            // "<Title> is a ...", as real abstracts open.
            for (i, word) in title.split(' ').enumerate() {
                if i > 0 {
                    s.space();
                }
                s.token(word);
            }
            s.space();
            s.token(if rng.chance(0.7) { "is" } else { "was" });
            s.space();
            s.token(if rng.chance(0.8) { "a" } else { "the" });
            len = len.saturating_sub(title_words + 2).max(2);
        } else {
            s.space();
        }
        for w in 0..len {
            if w > 0 || k == 0 {
                s.space();
            }
            if (w > 0 || k == 0) && rng.chance(LINK_RATE) {
                let mut other = rng.below(corpus.titles.len());
                if other == page {
                    other = (other + 1) % corpus.titles.len();
                }
                s.link(&corpus.titles[other]);
            } else {
                let word = &corpus.words[corpus.zipf.sample(rng)];
                if w == 0 && k > 0 {
                    capitalised.clear();
                    push_capitalised(&mut capitalised, word);
                    s.token(&capitalised);
                } else {
                    s.token(word);
                }
            }
            if w + 1 < len && rng.chance(COMMA_RATE) {
                s.token(",");
            }
        }
        s.token(".");
    }
    sentences
}

/// `title` with one letter (any) dropped from its first word; `None` when that word has a
/// single letter.
fn typo(title: &str, rng: &mut SplitMix64) -> Option<String> {
    let (first, rest) = title
        .split_once(' ')
        .map_or((title, ""), |(first, rest)| (first, rest));
    let letters: Vec<char> = first.chars().collect();
    if letters.len() < 2 {
        return None;
    }
    let dropped = rng.below(letters.len());
    let mut query: String = letters
        .iter()
        .enumerate()
        .filter(|&(idx, _)| idx != dropped)
        .map(|(_, c)| *c)
        .collect();
    if !rest.is_empty() {
        query.push(' ');
        query.push_str(rest);
    }
    Some(query)
}

fn write_queries(path: &Path, titles: &[String], n: usize, rng: &mut SplitMix64) -> io::Result<usize> {
    // What an exact search would open instead: the titles, ignoring case.
    let known: HashSet<String> = titles.iter().map(|title| title.to_lowercase()).collect();
    let mut out = BufWriter::new(File::create(path)?);
    let mut written: usize = 0;
    let mut attempts: usize = 0;
    while written < n {
        attempts += 1;
        if attempts > 1_000 + 100 * n {
            return Err(io::Error::other("could not draw enough typo queries"));
        }
        let title = &titles[rng.below(titles.len())];
        let query = if written.is_multiple_of(2) {
            title.clone()
        } else {
            let Some(query) = typo(title, rng) else {
                continue;
            };
            if known.contains(&query.to_lowercase()) {
                continue;
            }
            query
        };
        writeln!(out, "{query}\t{title}")?;
        written += 1;
    }
    out.flush()?;
    Ok(written)
}

fn run(args: &Args) -> io::Result<()> {
    let start = Instant::now();
    let mut rng = SplitMix64(args.seed);
    let vocabulary_size = args.vocabulary.unwrap_or_else(|| heaps_vocabulary(args.pages));
    let words = vocabulary(vocabulary_size, &mut rng);
    let zipf = Zipf::new(vocabulary_size, ZIPF_S);
    let titles = make_titles(args.pages, &words, &zipf, &mut rng);
    let corpus = Corpus { words, zipf, titles };
    let setup = start.elapsed().as_secs_f64();

    let mut out = BufWriter::with_capacity(1 << 20, File::create(&args.out)?);
    let mut pool: Vec<Sentence> = Vec::new();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut bytes: u64 = 0;
    for (page, title) in corpus.titles.iter().enumerate() {
        let used = fill_page(&mut rng, &corpus, page, &mut pool);
        buf.clear();
        write_page(&mut buf, 12 + 3 * page, title, &pool[..used]);
        out.write_all(&buf)?;
        bytes += buf.len() as u64;
    }
    out.flush()?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "wrote {} pages, {bytes} bytes, to {} in {secs:.2} s ({:.0} pages/s; vocabulary of {vocabulary_size} words and titles {setup:.2} s)",
        args.pages,
        args.out.display(),
        args.pages as f64 / secs
    );

    if let Some(path) = &args.queries {
        let mut query_rng = SplitMix64(args.seed ^ 0x5155_4552_5945_5321);
        let written = write_queries(path, &corpus.titles, args.num_queries, &mut query_rng)?;
        println!(
            "wrote {written} queries (half exact titles, half with one letter dropped from the first word) to {}",
            path.display()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("gen_wiki: {error}");
            ExitCode::FAILURE
        }
    }
}
