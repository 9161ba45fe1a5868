//! Benchmark of the offline Wikipedia: `index build` end to end from a JSON Lines dump, then
//! Search over the built index — mean and p99 per query, how often the expected title comes
//! first or among the five Similar titles, the resident memory of a process serving the index,
//! and index size against input size.
//!
//! ```sh
//! cargo run --release --bin gen_wiki -- --pages 200000 --out /tmp/wiki-200k.jsonl --queries /tmp/wiki-200k.queries.tsv
//! cargo run --release --bin bench_index -- --corpus /tmp/wiki-200k.jsonl --queries /tmp/wiki-200k.queries.tsv --out /tmp/wiki-200k.index
//! ```
//!
//! A search is timed as `explore --docstore index:DIR` runs it: `Search[query]` through an
//! `IndexExplorer` (default profile) to its observation. The search figures come from a child
//! process that only opens the index and searches, so its resident memory is that of serving,
//! not of building. Figures in README.md.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use std::sync::Arc;

use react_docstore::base::profile::Profile;
use react_docstore::docstore::index::{BuildConfig, IndexExplorer, IndexedPage, PageIndex, SearchHit, build};

const USAGE: &str = "usage: bench_index --corpus FILE.jsonl --queries FILE.tsv --out DIR [--threads N] [--memory SIZE] [--times FILE.tsv]\n       bench_index --search-only --queries FILE.tsv --out DIR [--times FILE.tsv]\n       bench_index --add-neighbour-table --out DIR (an index built before the table gets it)\n       bench_index --search-only --queries FILE.tsv --out DIR --against DIR2 (each query on both, alternately)";

struct Args {
    corpus: Option<PathBuf>,
    queries: PathBuf,
    out: PathBuf,
    threads: Option<usize>,
    memory: Option<usize>,
    search_only: bool,
    /// Where each timed search's figures go (`query<TAB>kind<TAB>cpu_ms<TAB>wall_ms<TAB>observation`,
    /// the observation escaped), to see which searches make the tail and compare two indexes.
    times: Option<PathBuf>,
    add_neighbour_table: bool,
    /// Another index of the same pages, searched alternately with `out`, query by query, so that
    /// the load of a shared machine weighs on both alike.
    against: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut corpus, mut queries, mut out, mut threads, mut memory, mut search_only) =
        (None, None, None, None, None, false);
    let mut times = None;
    let mut add_neighbour_table = false;
    let mut against = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--corpus" => corpus = Some(PathBuf::from(value()?)),
            "--queries" => queries = Some(PathBuf::from(value()?)),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--threads" => threads = Some(value()?.parse().map_err(|_| USAGE.to_owned())?),
            "--memory" => memory = Some(react_docstore::docstore::index::parse_size(&value()?)?),
            "--search-only" => search_only = true,
            "--add-neighbour-table" => add_neighbour_table = true,
            "--against" => against = Some(PathBuf::from(value()?)),
            "--times" => times = Some(PathBuf::from(value()?)),
            _ => return Err(USAGE.to_owned()),
        }
    }
    Ok(Args {
        corpus,
        queries: queries.unwrap_or_default(),
        out: out.ok_or(USAGE)?,
        threads,
        memory,
        search_only,
        times,
        add_neighbour_table,
        against,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    if args.add_neighbour_table {
        let started = Instant::now();
        if let Err(error) = react_docstore::docstore::index::neighbours::add_table(&args.out) {
            eprintln!("bench_index: {error}");
            return ExitCode::FAILURE;
        }
        println!(
            "table of title-word neighbours written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        return ExitCode::SUCCESS;
    }
    if let (true, Some(against)) = (args.search_only, &args.against) {
        return search_alternately(&args.out, against, &args.queries);
    }
    if args.search_only {
        return search(&args.out, &args.queries, args.times.as_deref());
    }
    let Some(corpus) = &args.corpus else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut config = BuildConfig::new(vec![corpus.clone()], args.out.clone());
    if let Some(threads) = args.threads {
        config.threads = threads;
    }
    if let Some(memory) = args.memory {
        config.memory_bytes = memory;
    }
    // The peak of anonymous memory (heap, not the file-backed pages of memory-mapped segments),
    // sampled while the build runs.
    let building = std::sync::Arc::new(AtomicBool::new(true));
    let sampler = {
        let building = building.clone();
        std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            while building.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(status_kib("RssAnon:"));
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            peak
        })
    };
    let started = Instant::now();
    let built = build(&config, &AtomicBool::new(false));
    building.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak_anon_mib = sampler.join().unwrap_or(f64::NAN) / 1024.0;
    let report = match built {
        Ok(report) => report,
        Err(error) => {
            eprintln!("bench_index: {error}");
            return ExitCode::FAILURE;
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let input_bytes = std::fs::metadata(corpus).map_or(0, |metadata| metadata.len());
    let index_bytes = dir_bytes(&args.out);
    println!(
        "build: {} pages in {seconds:.1} s = {:.0} pages/s ({} threads, {} MiB budget); input {:.1} MiB, index {:.1} MiB ({:.2}x the input); peak memory of the build process {:.0} MiB resident, {peak_anon_mib:.0} MiB of it anonymous (the rest: pages of the memory-mapped segments the merges read)",
        report.manifest.pages,
        report.manifest.pages as f64 / seconds,
        config.threads,
        config.memory_bytes >> 20,
        input_bytes as f64 / 1048576.0,
        index_bytes as f64 / 1048576.0,
        index_bytes as f64 / input_bytes.max(1) as f64,
        status_kib("VmHWM:") / 1024.0,
    );
    // The searches in a fresh process: its memory is that of serving the index.
    let mut command = Command::new(std::env::current_exe().expect("the benchmark's own path"));
    command
        .args(["--search-only", "--queries"])
        .arg(&args.queries)
        .arg("--out")
        .arg(&args.out);
    if let Some(times) = &args.times {
        command.arg("--times").arg(times);
    }
    let status = command.status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Opens the index, runs every query once to warm up and once timed, and prints the figures.
fn search(dir: &Path, queries: &Path, times: Option<&Path>) -> ExitCode {
    let opened = Instant::now();
    let index = match PageIndex::open(dir) {
        Ok((index, _manifest)) => index,
        Err(error) => {
            eprintln!("bench_index: {error}");
            return ExitCode::FAILURE;
        }
    };
    let open_ms = opened.elapsed().as_secs_f64() * 1000.0;
    let text = std::fs::read_to_string(queries).unwrap_or_default();
    let queries: Vec<(&str, &str)> = text.lines().filter_map(|line| line.split_once('\t')).collect();
    if queries.is_empty() {
        eprintln!(
            "bench_index: no `query<TAB>title` lines in {}",
            queries_name(queries.len())
        );
        return ExitCode::FAILURE;
    }
    let index = Arc::new(index);
    let mut explorer = IndexExplorer::new(index.clone(), Profile::Default);
    for (query, _) in &queries {
        let _ = explorer.search_now(query);
    }
    let mut tally = Tally::default();
    let mut slowest: Vec<(f64, &str)> = Vec::new();
    let mut lines = String::new();
    for (query, expected) in &queries {
        let (started, cpu_started) = (Instant::now(), thread_cpu_ms());
        let observation = explorer.search_now(query);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let cpu_ms = thread_cpu_ms() - cpu_started;
        let shown = observation.as_deref().unwrap_or_default().escape_default();
        slowest.push((ms, query));
        let kind = match QueryKind::of(query, expected) {
            QueryKind::Exact => "exact",
            QueryKind::Typo => "typo",
        };
        lines.push_str(&format!("{query}\t{kind}\t{cpu_ms:.4}\t{ms:.4}\t{shown}\n"));
        if let Err(error) = observation {
            eprintln!("bench_index: {query}: {error}");
            return ExitCode::FAILURE;
        }
        // What the observation showed, checked apart from the timing.
        match index.search(query) {
            Ok(hit) => tally.record(query, expected, &hit, Timing { ms, cpu_ms }),
            Err(error) => {
                eprintln!("bench_index: {query}: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(times) = times
        && let Err(error) = std::fs::write(times, &lines)
    {
        eprintln!("bench_index: cannot write `{}`: {error}", times.display());
        return ExitCode::FAILURE;
    }
    let Tally { exact, typo } = tally;
    let (exact_ms, typo_ms) = (exact.ms, typo.ms);
    let (mut exact_cpu_ms, mut typo_cpu_ms) = (exact.cpu_ms, typo.cpu_ms);
    let (exact_found, typo_first, typo_top5) = (exact.opened, typo.first, typo.top5);
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    let slowest: Vec<String> = slowest
        .iter()
        .take(5)
        .map(|(ms, query)| format!("{query:?} {ms:.2} ms"))
        .collect();
    println!("slowest searches: {}", slowest.join(", "));
    // CPU time of the searching thread: what a search costs, whatever else the machine runs.
    let mut all_cpu: Vec<f64> = exact_cpu_ms.iter().chain(&typo_cpu_ms).copied().collect();
    println!(
        "search CPU time: mean {:.3} ms, p99 {:.3} ms; exact titles mean {:.3} ms p99 {:.3} ms; one-typo titles mean {:.3} ms p99 {:.3} ms",
        mean(&all_cpu),
        percentile(&mut all_cpu, 0.99),
        mean(&exact_cpu_ms),
        percentile(&mut exact_cpu_ms, 0.99),
        mean(&typo_cpu_ms),
        percentile(&mut typo_cpu_ms, 0.99),
    );
    // Memory of serving, read before the in-memory indexes below are built and dropped.
    let (resident_mib, peak_mib) = (status_kib("VmRSS:") / 1024.0, status_kib("VmHWM:") / 1024.0);
    let anon_mib = status_kib("RssAnon:") / 1024.0;
    let in_memory_ms = in_memory_index_ms();
    let mut all: Vec<f64> = exact_ms.iter().chain(&typo_ms).copied().collect();
    println!(
        "search: {} queries ({} pages): mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms; exact titles mean {:.3} ms p99 {:.3} ms ({} of {} opened the expected page); one-typo titles mean {:.3} ms p99 {:.3} ms (expected title first {} of {}, among the 5 Similar {} of {}); index opened in {open_ms:.1} ms; resident memory {:.0} MiB (peak {:.0} MiB; anonymous {anon_mib:.0} MiB, the rest file-backed pages of the index); a question's 10 paragraphs indexed in memory (the distractor docstore) in {in_memory_ms:.2} ms (median of 50)",
        all.len(),
        index.pages(),
        mean(&all),
        percentile(&mut all, 0.50),
        percentile(&mut all, 0.99),
        mean(&exact_ms),
        percentile(&mut exact_ms.clone(), 0.99),
        exact_found,
        exact_ms.len(),
        mean(&typo_ms),
        percentile(&mut typo_ms.clone(), 0.99),
        typo_first,
        typo_ms.len(),
        typo_top5,
        typo_ms.len(),
        resident_mib,
        peak_mib,
    );
    ExitCode::SUCCESS
}

/// Searches every query on the index at `dir` and on the one at `against` alternately (which comes
/// first alternates too), and prints the CPU figures of each and how many observations differ.
fn search_alternately(dir: &Path, against: &Path, queries: &Path) -> ExitCode {
    let open = |dir: &Path| match PageIndex::open(dir) {
        Ok((index, _manifest)) => Some(IndexExplorer::new(Arc::new(index), Profile::Default)),
        Err(error) => {
            eprintln!("bench_index: {error}");
            None
        }
    };
    let (Some(mut first), Some(mut second)) = (open(dir), open(against)) else {
        return ExitCode::FAILURE;
    };
    let text = std::fs::read_to_string(queries).unwrap_or_default();
    let queries: Vec<(&str, &str)> = text.lines().filter_map(|line| line.split_once('\t')).collect();
    for (query, _) in &queries {
        let _ = first.search_now(query);
        let _ = second.search_now(query);
    }
    let timed = |explorer: &mut IndexExplorer, query: &str| {
        let started = thread_cpu_ms();
        let observation = explorer
            .search_now(query)
            .unwrap_or_else(|error| error.to_string());
        (thread_cpu_ms() - started, observation)
    };
    let (mut cpu, mut typo_cpu) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let mut differ = 0;
    for (idx, (query, expected)) in queries.iter().enumerate() {
        let (a, b) = if idx % 2 == 0 {
            let a = timed(&mut first, query);
            (a, timed(&mut second, query))
        } else {
            let b = timed(&mut second, query);
            (timed(&mut first, query), b)
        };
        differ += usize::from(a.1 != b.1);
        for (side, ms) in [a.0, b.0].into_iter().enumerate() {
            cpu[side].push(ms);
            if QueryKind::of(query, expected) == QueryKind::Typo {
                typo_cpu[side].push(ms);
            }
        }
    }
    for (side, dir) in [dir, against].into_iter().enumerate() {
        println!(
            "{}: search CPU mean {:.3} ms, p99 {:.3} ms; one-typo titles mean {:.3} ms p99 {:.3} ms",
            dir.display(),
            mean(&cpu[side]),
            percentile(&mut cpu[side], 0.99),
            mean(&typo_cpu[side]),
            percentile(&mut typo_cpu[side], 0.99),
        );
    }
    println!("{differ} of {} observations differ", queries.len());
    ExitCode::SUCCESS
}

/// What the queries file says a query is: an exact title (the query is the expected title) or
/// a title with one letter dropped. Queries are counted by this kind, never by what the search
/// answered: an exact title that misses is an exact title that did not open its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Exact,
    Typo,
}

impl QueryKind {
    fn of(query: &str, expected: &str) -> QueryKind {
        if query == expected {
            QueryKind::Exact
        } else {
            QueryKind::Typo
        }
    }
}

/// How long one search took: wall and the searching thread's CPU, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Timing {
    ms: f64,
    cpu_ms: f64,
}

/// The searches of one kind: their times, how often the expected page opened (`opened`), how
/// often the expected title was the page opened or the first Similar title (`first`), and how
/// often it was the page or among the Similar titles (`top5`).
#[derive(Debug, Default)]
struct KindTally {
    ms: Vec<f64>,
    cpu_ms: Vec<f64>,
    opened: usize,
    first: usize,
    top5: usize,
}

#[derive(Debug, Default)]
struct Tally {
    exact: KindTally,
    typo: KindTally,
}

impl Tally {
    fn record(&mut self, query: &str, expected: &str, hit: &SearchHit, timing: Timing) {
        let kind = match QueryKind::of(query, expected) {
            QueryKind::Exact => &mut self.exact,
            QueryKind::Typo => &mut self.typo,
        };
        kind.ms.push(timing.ms);
        kind.cpu_ms.push(timing.cpu_ms);
        let (opened, first, top5) = match hit {
            SearchHit::Page(page) => (
                page.title == expected,
                page.title == expected,
                page.title == expected,
            ),
            SearchHit::Similar(titles) => (
                false,
                titles.first().is_some_and(|title| title == expected),
                titles.iter().any(|title| title == expected),
            ),
        };
        kind.opened += usize::from(opened);
        kind.first += usize::from(first);
        kind.top5 += usize::from(top5);
    }
}

/// How long the distractor docstore takes to index one question's ten paragraphs in memory.
fn in_memory_index_ms() -> f64 {
    let pages: Vec<IndexedPage> = (0..10)
        .map(|idx| {
            IndexedPage::split(
                format!("Paragraph title {idx}"),
                vec![vec![
                    format!("Paragraph {idx} is about something."),
                    " It has a second sentence.".repeat(3),
                ]],
            )
        })
        .collect();
    let mut times: Vec<f64> = (0..50)
        .map(|_| {
            let started = Instant::now();
            let _ = PageIndex::in_memory(pages.clone(), "distractor");
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    percentile(&mut times, 0.5)
}

/// CPU time of the calling thread, in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 * 1000.0 + now.tv_nsec as f64 / 1e6
}

fn queries_name(n: usize) -> String {
    format!("the queries file ({n} lines read)")
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

fn percentile(values: &mut [f64], share: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let idx = ((values.len() as f64 * share).ceil() as usize).clamp(1, values.len()) - 1;
    values[idx]
}

/// A `/proc/self/status` figure in KiB (`VmRSS:`, `VmHWM:`).
fn status_kib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMING: Timing = Timing { ms: 1.0, cpu_ms: 1.0 };

    #[test]
    fn queries_are_counted_by_their_recorded_kind_not_by_the_answer() {
        let mut tally = Tally::default();
        let page = |title: &str| SearchHit::Page(IndexedPage::split(title, Vec::new()));
        let similar =
            |titles: &[&str]| SearchHit::Similar(titles.iter().map(|title| title.to_string()).collect());
        // Exact titles: one opens its page, one misses (a Similar list), one opens another page.
        tally.record("Red River", "Red River", &page("Red River"), TIMING);
        tally.record("Blue Lake", "Blue Lake", &similar(&["Blue Lake"]), TIMING);
        tally.record("Of", "Of", &page("OF"), TIMING);
        // One-typo titles: found first, found third, missed, and one that opened a page.
        tally.record(
            "ed River",
            "Red River",
            &similar(&["Red River", "Bed River"]),
            TIMING,
        );
        tally.record(
            "lue Lake",
            "Blue Lake",
            &similar(&["Glue Lake", "Clue Lake", "Blue Lake"]),
            TIMING,
        );
        tally.record("Gren Hill", "Green Hill", &similar(&["Gran Hill"]), TIMING);
        tally.record("ree", "Tree", &page("Free"), TIMING);
        assert_eq!((tally.exact.ms.len(), tally.exact.opened), (3, 1));
        assert_eq!(
            (tally.typo.ms.len(), tally.typo.first, tally.typo.top5),
            (4, 1, 2)
        );
    }
}
