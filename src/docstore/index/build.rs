//! `build`: a frozen dump → an offline Wikipedia index, streaming and in parallel. One thread reads
//! and decompresses the sources ([`super::input`]) and deals the dump out in ranges of
//! consecutive lines; each indexing thread turns its ranges' lines into pages
//! ([`super::formats`]) and writes each range into segments of its own, in dump order; the
//! segments, stacked in range order, become the index's one segment in dump order without sorting
//! or recompressing a page. Memory is bounded by the budget, never by the size of the dump.
//!
//! Crash-safe: the index is built in a temporary directory beside the destination and moved into
//! place only when complete, its manifest written last; an interrupted build leaves nothing that
//! opens as an index, and building again replaces the old one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tantivy::directory::MmapDirectory;
use tantivy::indexer::{AddOperation, SegmentWriter};
use tantivy::{Index, IndexWriter, Segment, SegmentReader, TantivyDocument, TantivyError};

use super::IndexError;
use super::formats::{DumpFormat, Record, dpr_page, parse_record};
use super::input::{Feeder, Ranges, ReadIssue, Work, for_each_line};
use super::manifest::{INDEX_FORMAT, Manifest, SourceInfo, thousands};
use super::neighbours::{NEIGHBOUR_TABLE_FORMAT, write_table};
use super::schema::{Digest, IndexedPage, WikiSchema};
use super::title_table::TitleTableBuilder;
use crate::base::fsutil::{process_is_alive, sync_parent};

/// The least and the most memory budget a build takes unless `--memory` says otherwise.
const DEFAULT_MEMORY: std::ops::RangeInclusive<usize> = (512 << 20)..=(2 << 30);
/// The share of the memory this process may use that the default budget takes: an eighth.
const DEFAULT_MEMORY_SHARE: usize = 8;
/// The most indexing threads a build runs.
pub const MAX_THREADS: usize = 8;
/// The most memory tantivy accepts for one indexing thread (just under 4 GiB).
const MAX_MEMORY_PER_THREAD: usize = 4000 << 20;
/// The least memory tantivy accepts for one indexing thread.
pub const MIN_MEMORY_PER_THREAD: usize = 16 << 20;
/// How many malformed records are shown one by one; the rest are only counted.
const SHOWN_ISSUES: u64 = 100;
/// How often the plain progress line is printed when stderr is not a terminal.
const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);
/// The share of the memory budget the queued input of the indexing threads may hold (each thread
/// a range of lines): half, the rest going to the segments being written. Larger ranges are
/// fewer segments: each builds a term dictionary of the words it holds, and the stacking reads
/// them all (at 200k pages, half rather than a quarter: 4 segments instead of 8, the stacking
/// 2.7 → 2.1 CPU-seconds).
const QUEUED_SHARE: usize = 2;
/// The fewest ranges each thread is dealt (by the dump's size on disk): ranges of a quarter of a
/// 2 GiB budget gave a 534 MB dump (200,000 pages) nearly whole to one thread, 6.8 s, not 4.3.
const RANGES_PER_THREAD: usize = 2;
/// The fewest and the most bytes of lines in a range: a range is at least one segment, so
/// smaller ranges mean more segments to stack at the end.
const MIN_RANGE_BYTES: usize = 4 << 20;
const MAX_RANGE_BYTES: usize = 512 << 20;
/// A segment is written out when its writer's memory comes this close to the thread's budget
/// (tantivy's own margin).
const FLUSH_MARGIN: usize = 1_000_000;
/// The subdirectory of the staging directory the ranges' segments are written in before they
/// are stacked into the index.
const PARTS_DIR: &str = "parts";

/// What `index build` does.
#[derive(Debug, Clone)]
pub struct BuildConfig {
    pub sources: Vec<PathBuf>,
    pub out: PathBuf,
    /// `None`: recognise each source's format from its first line.
    pub format: Option<DumpFormat>,
    /// The indexing threads' memory budget, in bytes.
    pub memory_bytes: usize,
    /// Indexing threads: each parses the ranges dealt to it and writes their segments.
    pub threads: usize,
    pub malformed: MalformedRecords,
    pub progress: BuildProgress,
}

impl BuildConfig {
    pub fn new(sources: Vec<PathBuf>, out: PathBuf) -> BuildConfig {
        BuildConfig {
            sources,
            out,
            format: None,
            memory_bytes: default_memory_bytes(),
            threads: std::thread::available_parallelism().map_or(2, usize::from),
            malformed: MalformedRecords::Skip,
            progress: BuildProgress::Quiet,
        }
    }
}

/// The bytes of lines in a range: a share of the `memory` budget for each of the `threads` (half
/// of it queued), yet at least [`RANGES_PER_THREAD`] ranges for each thread in a dump of
/// `dump_bytes` on disk.
fn default_range_bytes(memory: usize, threads: usize, dump_bytes: u64) -> usize {
    let by_dump = usize::try_from(dump_bytes).unwrap_or(usize::MAX) / (threads * RANGES_PER_THREAD);
    (memory / QUEUED_SHARE / threads)
        .min(by_dump)
        .clamp(MIN_RANGE_BYTES, MAX_RANGE_BYTES)
}

/// The memory budget unless `--memory` says otherwise: an eighth of the memory this process may
/// use (the machine's, or its cgroup's limit when lower: a Slurm job, a container), from 512 MiB
/// to 2 GiB. A larger budget is larger ranges, so fewer segments for the last merge to read: the
/// 5,233,330 pages of `gen_wiki` built in 211 s at 512 MiB and 176 s at 2 GiB.
pub fn default_memory_bytes() -> usize {
    let available = [physical_memory(), cgroup_memory_limit()]
        .into_iter()
        .flatten()
        .min();
    available.map_or(*DEFAULT_MEMORY.start(), |bytes| {
        (bytes / DEFAULT_MEMORY_SHARE).clamp(*DEFAULT_MEMORY.start(), *DEFAULT_MEMORY.end())
    })
}

/// The machine's memory, in bytes.
fn physical_memory() -> Option<usize> {
    // SAFETY: `sysconf` only reads a system constant.
    let (pages, page_bytes) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    usize::try_from(pages)
        .ok()?
        .checked_mul(usize::try_from(page_bytes).ok()?)
}

/// The memory limit of this process's cgroup, if it has one.
fn cgroup_memory_limit() -> Option<usize> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_limit(&membership, |path| std::fs::read_to_string(path).ok())
}

/// The memory limit that `/proc/self/cgroup`'s `membership` leads to, each file read by `read`:
/// cgroup v2 (`0::/path`, its `memory.max`), else v1's memory controller (`N:memory:/path`, its
/// `memory.limit_in_bytes`). `max` (no limit) and unreadable files give none.
fn cgroup_limit(membership: &str, read: impl Fn(&str) -> Option<String>) -> Option<usize> {
    membership.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|controller| controller == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            return None;
        };
        read(&file)?.trim().parse().ok()
    })
}

/// What a malformed record does to a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedRecords {
    /// Reported (file, line, reason), counted and skipped.
    Skip,
    /// The first one ends the build (`--strict`).
    Fail,
}

/// How a build shows its progress on stderr.
#[derive(Clone)]
pub enum BuildProgress {
    /// Events to the caller's view (the binary's bar, on a terminal).
    View(Arc<dyn BuildView>),
    /// A plain line every few seconds (a log file).
    Lines,
    /// Nothing but the malformed records (tests).
    Quiet,
}

impl std::fmt::Debug for BuildProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BuildProgress::View(_) => "View",
            BuildProgress::Lines => "Lines",
            BuildProgress::Quiet => "Quiet",
        })
    }
}

/// What a build tells a view of its progress, a few times a second.
pub trait BuildView: Send + Sync {
    /// The build reads `total_bytes` of input.
    fn started(&self, total_bytes: u64);
    /// `read` bytes read so far, making `pages` pages, at `pages_per_second`.
    fn advanced(&self, read: u64, pages: u64, pages_per_second: f64);
    /// The build is over (done, failed or interrupted).
    fn finished(&self);
}

/// A malformed record: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub origin: String,
    pub line: u64,
    pub reason: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, line {}: {}", self.origin, self.line, self.reason)
    }
}

/// What a finished build reports.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub manifest: Manifest,
    pub dir: PathBuf,
    /// The first malformed records (up to 100), in the order they were found.
    pub malformed: Vec<Malformed>,
}

/// Shared between the reading thread, the indexing threads and the progress display.
struct Shared {
    bytes_read: AtomicU64,
    pages: AtomicU64,
    malformed: AtomicU64,
    abort: AtomicBool,
    shown: Mutex<Vec<Malformed>>,
    /// The first failure of a thread.
    failure: Mutex<Option<IndexError>>,
    /// Under `--strict`: the malformed record earliest in the dump, by (member, line).
    first_malformed: Mutex<Option<((u64, u64), Malformed)>>,
    progress: BuildProgress,
    malformed_records: MalformedRecords,
}

impl Shared {
    fn malformed(&self, record: Malformed, position: (u64, u64)) {
        if self.malformed_records == MalformedRecords::Fail {
            // Several threads may meet one: the one earliest in the dump is reported.
            if let Ok(mut first) = self.first_malformed.lock()
                && first.as_ref().is_none_or(|(earliest, _)| position < *earliest)
            {
                *first = Some((position, record));
            }
            self.abort.store(true, Ordering::Relaxed);
            return;
        }
        let count = self.malformed.fetch_add(1, Ordering::Relaxed) + 1;
        if count <= SHOWN_ISSUES {
            if !matches!(self.progress, BuildProgress::Quiet) {
                let mut stderr = crate::base::output::stderr();
                let _ = writeln!(stderr, "warning: skipped a malformed record: {record}");
                if count == SHOWN_ISSUES {
                    let _ = writeln!(
                        stderr,
                        "warning: further malformed records are counted, not shown"
                    );
                }
            }
            if let Ok(mut shown) = self.shown.lock() {
                shown.push(record);
            }
        }
    }

    /// A line the reading found malformed (too long), reported as a malformed record.
    fn read_issue(&self, issue: ReadIssue) {
        let position = (issue.seq, issue.line);
        let record = Malformed {
            origin: issue.origin.to_string(),
            line: issue.line,
            reason: issue.reason,
        };
        self.malformed(record, position);
    }

    fn fail(&self, error: IndexError) {
        if let Ok(mut failure) = self.failure.lock()
            && failure.is_none()
        {
            *failure = Some(error);
        }
        self.abort.store(true, Ordering::Relaxed);
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// How many pages the readers indexed, once they are done; or why the build stops: an
    /// interruption, the first malformed record, the first failure, or no page at all.
    fn pages_read(&self, interrupted: &AtomicBool) -> Result<u64, IndexError> {
        if interrupted.load(Ordering::Relaxed) {
            return Err(IndexError::Interrupted);
        }
        if let Some((_, record)) = self
            .first_malformed
            .lock()
            .ok()
            .and_then(|mut first| first.take())
        {
            return Err(IndexError::Malformed(record));
        }
        if let Some(error) = self.failure.lock().ok().and_then(|mut failure| failure.take()) {
            return Err(error);
        }
        let pages = self.pages.load(Ordering::Relaxed);
        if pages == 0 {
            return Err(IndexError::NoPages {
                malformed: self.malformed.load(Ordering::Relaxed),
            });
        }
        Ok(pages)
    }
}

/// Builds the index `config` describes. `interrupted` is polled: when it turns true the build
/// stops, removes its temporary directory and returns [`IndexError::Interrupted`].
pub fn build(config: &BuildConfig, interrupted: &AtomicBool) -> Result<BuildReport, IndexError> {
    build_in_ranges(config, interrupted, None)
}

/// [`build`], with ranges of `range_bytes` of lines if given (tests), else of a share of the
/// memory budget.
fn build_in_ranges(
    config: &BuildConfig,
    interrupted: &AtomicBool,
    range_bytes: Option<usize>,
) -> Result<BuildReport, IndexError> {
    let started = Instant::now();
    if config.sources.is_empty() {
        return Err(IndexError::NoSources);
    }
    // The destination is checked before anything is read.
    let staging = Staging::new(&config.out)?;
    let mut source_infos = Vec::new();
    for path in &config.sources {
        source_infos.push(SourceInfo {
            path: path.clone(),
            bytes: bytes_on_disk(path)?,
            format: None,
        });
    }
    let total_bytes: u64 = source_infos.iter().map(|source| source.bytes).sum();

    let (schema, fields) = WikiSchema::new();
    let tantivy_error = |source| IndexError::Tantivy {
        dir: staging.dir.clone(),
        source,
    };
    let threads = config.threads.clamp(1, MAX_THREADS);
    if config.memory_bytes / threads > MAX_MEMORY_PER_THREAD {
        return Err(IndexError::Memory {
            memory: config.memory_bytes,
            threads,
        });
    }
    let memory = config.memory_bytes.max(threads * MIN_MEMORY_PER_THREAD);
    let range_bytes = range_bytes.unwrap_or_else(|| default_range_bytes(memory, threads, total_bytes));
    let segment_budget = (memory.saturating_sub(threads * range_bytes) / threads).max(MIN_MEMORY_PER_THREAD);
    // The ranges' segments, in an index of their own: their pages come in dump order, so they are
    // written as they come, never sorted.
    let parts_dir = staging.dir.join(PARTS_DIR);
    std::fs::create_dir(&parts_dir).map_err(|source| IndexError::Write {
        path: parts_dir.clone(),
        source,
    })?;
    let parts_index = Index::builder()
        .schema(schema)
        .settings(WikiSchema::part_settings())
        .create_in_dir(&parts_dir)
        .map_err(tantivy_error)?;
    WikiSchema::register_tokenizer(&parts_index);

    let shared = Shared {
        bytes_read: AtomicU64::new(0),
        pages: AtomicU64::new(0),
        malformed: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        shown: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
        first_malformed: Mutex::new(None),
        progress: config.progress.clone(),
        malformed_records: config.malformed,
    };
    let (ranges, dealt) = Ranges::new(threads, range_bytes);
    let mut parts: Vec<Part> = Vec::new();
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = dealt
            .into_iter()
            .map(|items| {
                let shared = &shared;
                let mut writer = RangeWriter::new(&parts_index, segment_budget);
                let fields = &fields;
                scope.spawn(move || {
                    for work in items {
                        if shared.aborted() {
                            continue;
                        }
                        if let Err(source) = writer.start_range(work.range) {
                            shared.fail(tantivy_error(source));
                            continue;
                        }
                        index_work(&work, &mut writer, fields, shared);
                    }
                    if !shared.aborted()
                        && let Err(source) = writer.flush()
                    {
                        shared.fail(tantivy_error(source));
                    }
                    writer.parts
                })
            })
            .collect();
        let display = scope.spawn(|| show_progress(&shared, total_bytes, &finished, interrupted, started));
        // Ends the progress display however this scope ends (a panic while reading included).
        let _finish = Finish(&finished);
        let issue = |issue: ReadIssue| shared.read_issue(issue);
        let mut feeder = Feeder::new(ranges, config.format, &shared.bytes_read, &shared.abort, &issue);
        for (source, info) in config.sources.iter().zip(source_infos.iter_mut()) {
            if shared.aborted() {
                break;
            }
            match feeder.source(source) {
                Ok(format) => info.format = format,
                Err(error) => shared.fail(error),
            }
        }
        drop(feeder);
        for worker in workers {
            match worker.join() {
                Ok(worker_parts) => parts.extend(worker_parts),
                Err(_) => shared.fail(IndexError::Thread),
            }
        }
        finished.store(true, Ordering::Relaxed);
        let _ = display.join();
    });
    let pages = shared.pages_read(interrupted)?;
    let digest = stack_parts(parts, &staging.dir, &fields).map_err(tantivy_error)?;
    drop(parts_index);
    std::fs::remove_dir_all(&parts_dir).map_err(|source| IndexError::Write {
        path: parts_dir.clone(),
        source,
    })?;
    if interrupted.load(Ordering::Relaxed) {
        return Err(IndexError::Interrupted);
    }
    let malformed = shared.malformed.load(Ordering::Relaxed);
    let manifest = built_manifest(source_infos, &digest, pages, malformed, started);
    manifest.write(&staging.dir)?;
    share_with_readers(&staging.dir)?;
    let dir = staging.install()?;
    let malformed = shared.shown.into_inner().unwrap_or_default();
    Ok(BuildReport {
        manifest,
        dir,
        malformed,
    })
}

/// The manifest of an index built from `sources` since `started`.
fn built_manifest(
    sources: Vec<SourceInfo>,
    digest: &Digest,
    pages: u64,
    malformed: u64,
    started: Instant,
) -> Manifest {
    let mut dump_formats: Vec<DumpFormat> = Vec::new();
    for format in sources.iter().filter_map(|source| source.format) {
        if !dump_formats.contains(&format) {
            dump_formats.push(format);
        }
    }
    let label: Vec<&str> = dump_formats.iter().map(|format| format.as_str()).collect();
    Manifest {
        format: INDEX_FORMAT.to_owned(),
        snapshot: digest.snapshot(&label.join("+")),
        dump_formats,
        sources,
        pages,
        malformed,
        built: httpdate::fmt_http_date(SystemTime::now()),
        build_seconds: started.elapsed().as_secs_f64(),
        tool: concat!("react-docstore ", env!("CARGO_PKG_VERSION")).to_owned(),
        neighbour_table: Some(NEIGHBOUR_TABLE_FORMAT.to_owned()),
    }
}

/// Merges the committed segments of an index written by tantivy's own writer (the in-memory
/// docstores) into one. Each segment is sorted by `ordinal` ([`WikiSchema::settings`]), so the
/// merged one holds the pages in dump order: document ids follow the dump, and the ranked search
/// breaks its ties by document id — the page earlier in the dump, on every machine and whatever
/// the threads — without reading a fast field per match.
pub(super) fn merge_into_one_segment(writer: &mut IndexWriter<TantivyDocument>) -> tantivy::Result<()> {
    let segments = writer.index().searchable_segment_ids()?;
    if segments.len() > 1 {
        writer.merge(&segments).wait()?;
    }
    Ok(())
}

/// Makes the finished index at `dir` open for every user the umask allows, read-only: tantivy
/// writes `meta.json` and `.managed.json` through temporary files (mode 0600), so they get the
/// mode of the manifest, created as any new file is; its lock files, which nothing opening a
/// finished index takes (it is opened read-only), are removed.
fn share_with_readers(dir: &Path) -> Result<(), IndexError> {
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| IndexError::Write { path, source }
    };
    let manifest = Manifest::path(dir);
    let permissions = std::fs::metadata(&manifest)
        .map_err(write_error(&manifest))?
        .permissions();
    for name in ["meta.json", ".managed.json"] {
        let path = dir.join(name);
        std::fs::set_permissions(&path, permissions.clone()).map_err(write_error(&path))?;
    }
    for name in [".tantivy-meta.lock", ".tantivy-writer.lock"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Ok(())
}

/// One segment a build wrote: the range it holds part of, and which part.
struct Part {
    range: u64,
    part: u32,
    segment: Segment,
}

/// Stacks the ranges' segments, in dump order, into the one segment of a new index in `dir`.
/// Their ordinals do not overlap and follow the range order, so tantivy concatenates them as they
/// are (compressed blocks of stored pages copied, not recompressed) instead of sorting every
/// page; document ids follow the dump, and the ranked search breaks its ties by document id — the
/// page earlier in the dump, on every machine and whatever the threads — without reading a fast
/// field per match. Meanwhile, on the core the merge leaves idle, the segments' title columns
/// give the index's [`TitleTable`](super::title_table::TitleTable), and the stored pages, read in
/// dump order, the index's [`Digest`] ([`digest_pages`]).
fn stack_parts(mut parts: Vec<Part>, dir: &Path, fields: &WikiSchema) -> tantivy::Result<Digest> {
    parts.sort_by_key(|part| (part.range, part.part));
    let segments: Vec<Segment> = parts.into_iter().map(|part| part.segment).collect();
    let alive = segments.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let titles = scope.spawn(|| -> tantivy::Result<()> {
            let mut table = TitleTableBuilder::default();
            for segment in &segments {
                table.add_segment(&SegmentReader::open(segment)?)?;
            }
            Ok(table.write(dir)?)
        });
        let digest = scope.spawn(|| digest_pages(&segments, fields));
        // `merge_filtered_segments` is how tantivy merges segments of another index into a new one
        // (`merge_indices` is the same for whole indexes).
        let merged = tantivy::indexer::merge_filtered_segments(
            &segments,
            WikiSchema::settings(),
            alive,
            MmapDirectory::open(dir)?,
        );
        let titles = titles.join().unwrap_or_else(|_| {
            Err(TantivyError::InternalError(
                "the title table's thread panicked".into(),
            ))
        });
        let digest = digest.join().unwrap_or_else(|_| {
            Err(TantivyError::InternalError(
                "the snapshot digest's thread panicked".into(),
            ))
        });
        // The title words one edit from each other, from the merged segment's term dictionary
        // (while the digest may still be reading the pages).
        let neighbours = merged.and_then(|index| {
            let segments = index.searchable_segments()?;
            let [segment] = &segments[..] else {
                return Err(TantivyError::InternalError(format!(
                    "the stacked index has {} segments, not one",
                    segments.len()
                )));
            };
            let titles = SegmentReader::open(segment)?.inverted_index(fields.title)?;
            Ok(write_table(titles.terms(), dir)?)
        });
        neighbours?;
        titles?;
        digest
    })
}

/// The place a page's [`Digest`] gives it: its number in the dump (from 1) after the source
/// number 1, `(1 << 32) | number`, which is the ordinal the page of that line has in a dump of
/// one plain file with a page a line (HotpotQA's concatenated abstracts), so indexes of such a
/// file keep the snapshot ids earlier versions gave them.
const DIGEST_FIRST_SOURCE: u64 = 1 << 32;

/// The fingerprint of the pages the `segments` store, taken in order (dump order): each page's
/// title and stored body with its number in the dump. It depends on the pages and their order
/// only — not on how the dump was packaged (one plain file, a tar of compressed members, a
/// directory), which gives pages other ordinals (a member's number and a line within it).
fn digest_pages(segments: &[Segment], fields: &WikiSchema) -> tantivy::Result<Digest> {
    let mut digest = Digest::default();
    let mut number = 0u64;
    for segment in segments {
        let reader = SegmentReader::open(segment)?;
        let store = reader.get_store_reader(1)?;
        for document in store.iter::<TantivyDocument>(reader.alive_bitset()) {
            let document = document?;
            let text = |field| {
                document
                    .get_first(field)
                    .and_then(|value| tantivy::schema::Value::as_str(&value))
                    .unwrap_or("")
            };
            number += 1;
            digest.add_body(
                DIGEST_FIRST_SOURCE + number,
                text(fields.title),
                text(fields.body),
            );
        }
    }
    Ok(digest)
}

/// An indexing thread's segments: it writes each range it is dealt into segments of its own (a
/// new one when a segment fills the thread's memory budget), its pages in the order they come,
/// which is dump order.
struct RangeWriter<'a> {
    index: &'a Index,
    budget: usize,
    range: Option<u64>,
    writer: Option<(SegmentWriter, Segment)>,
    part: u32,
    parts: Vec<Part>,
}

impl<'a> RangeWriter<'a> {
    fn new(index: &'a Index, budget: usize) -> RangeWriter<'a> {
        RangeWriter {
            index,
            budget,
            range: None,
            writer: None,
            part: 0,
            parts: Vec::new(),
        }
    }

    /// Ends the segment of the previous range when `range` is another one.
    fn start_range(&mut self, range: u64) -> tantivy::Result<()> {
        if self.range != Some(range) {
            self.flush()?;
            self.range = Some(range);
            self.part = 0;
        }
        Ok(())
    }

    fn add(&mut self, document: TantivyDocument) -> tantivy::Result<()> {
        let writer = match &mut self.writer {
            Some((writer, _)) => writer,
            None => {
                let segment = self.index.new_segment();
                let writer = SegmentWriter::for_segment(self.budget, segment.clone())?;
                &mut self.writer.insert((writer, segment)).0
            }
        };
        writer.add_document(AddOperation { opstamp: 0, document })?;
        if writer.mem_usage() >= self.budget.saturating_sub(FLUSH_MARGIN) {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the current segment out, if any.
    fn flush(&mut self) -> tantivy::Result<()> {
        if let Some((writer, segment)) = self.writer.take() {
            let max_doc = writer.max_doc();
            writer.finalize()?;
            self.parts.push(Part {
                range: self.range.unwrap_or_default(),
                part: self.part,
                segment: segment.with_max_doc(max_doc),
            });
            self.part += 1;
        }
        Ok(())
    }
}

/// Sets its flag when dropped.
struct Finish<'a>(&'a AtomicBool);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Parses one work item and writes its pages into the thread's segment.
fn index_work(work: &Work, writer: &mut RangeWriter<'_>, fields: &WikiSchema, shared: &Shared) {
    // DPR: consecutive passages of one title, waiting for the title to change.
    let mut passages: Option<(u64, String, Vec<String>)> = None;
    let mut add = |ordinal: u64, page: IndexedPage| {
        let body = page.encode_body();
        match writer.add(fields.document_with_body(&page, body, ordinal)) {
            Ok(()) => {
                shared.pages.fetch_add(1, Ordering::Relaxed);
            }
            Err(source) => shared.fail(IndexError::Write {
                path: PathBuf::from("(index writer)"),
                source: std::io::Error::other(source),
            }),
        }
    };
    let result = for_each_line(
        work,
        |line_no, line| {
            if shared.aborted() {
                return;
            }
            // The member's place in the dump and the line's in the member: the same however the
            // member was packaged or cut into work items.
            let ordinal = (work.seq << 32) | line_no.min(u64::from(u32::MAX));
            match parse_record(work.format, line) {
                Ok(Record::Page(page)) => add(ordinal, page),
                Ok(Record::Passage { title, text }) => match &mut passages {
                    Some((_, current, texts)) if *current == title => texts.push(text),
                    _ => {
                        if let Some((first, title, texts)) = passages.replace((ordinal, title, vec![text])) {
                            add(first, dpr_page(title, &texts));
                        }
                    }
                },
                Ok(Record::Nothing) => {}
                Err(reason) => shared.malformed(
                    Malformed {
                        origin: work.origin.to_string(),
                        line: line_no,
                        reason,
                    },
                    (work.seq, line_no),
                ),
            }
        },
        |issue| shared.read_issue(issue),
    );
    if let Some((first, title, texts)) = passages.take() {
        add(first, dpr_page(title, &texts));
    }
    if let Err(source) = result {
        shared.fail(IndexError::Archive {
            origin: work.origin.to_string(),
            message: source.to_string(),
        });
    }
}

/// The progress bar, or a plain line every few seconds, until the build finishes.
fn show_progress(
    shared: &Shared,
    total_bytes: u64,
    finished: &AtomicBool,
    interrupted: &AtomicBool,
    started: Instant,
) {
    let view = match &shared.progress {
        BuildProgress::View(view) => Some(view.clone()),
        BuildProgress::Lines | BuildProgress::Quiet => None,
    };
    if let Some(view) = &view {
        view.started(total_bytes);
    }
    let mut last_line = Instant::now();
    while !finished.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if interrupted.load(Ordering::Relaxed) {
            shared.abort.store(true, Ordering::Relaxed);
        }
        let pages = shared.pages.load(Ordering::Relaxed);
        let read = shared.bytes_read.load(Ordering::Relaxed).min(total_bytes);
        let rate = pages as f64 / started.elapsed().as_secs_f64().max(0.001);
        match (&view, &shared.progress) {
            (Some(view), _) => view.advanced(read, pages, rate),
            (None, BuildProgress::Lines) if last_line.elapsed() >= PROGRESS_LINE_EVERY => {
                last_line = Instant::now();
                let share = if total_bytes == 0 {
                    1.0
                } else {
                    read as f64 / total_bytes as f64
                };
                let eta = if share > 0.0 {
                    format!("{:.0} s", started.elapsed().as_secs_f64() * (1.0 - share) / share)
                } else {
                    "unknown".to_owned()
                };
                let _ = writeln!(
                    crate::base::output::stderr(),
                    "indexed {pages} pages, {:.1}% of the input read, {rate:.0} pages/s, ETA {eta}",
                    share * 100.0
                );
            }
            _ => {}
        }
    }
    if let Some(view) = view {
        view.finished();
    }
}

/// Bytes on disk of a file, or of every file under a directory.
fn bytes_on_disk(path: &Path) -> Result<u64, IndexError> {
    let metadata = std::fs::metadata(path).map_err(|source| IndexError::Read {
        path: path.to_owned(),
        source,
    })?;
    if !metadata.is_dir() {
        return Ok(metadata.len());
    }
    // Linked directories inside a source are not read (see `files_under`): not counted either.
    let mut total = 0;
    let entries = std::fs::read_dir(path).map_err(|source| IndexError::Read {
        path: path.to_owned(),
        source,
    })?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|file_type| file_type.is_dir()) {
            total += bytes_on_disk(&entry.path())?;
        } else if let Ok(metadata) = entry.path().metadata()
            && metadata.is_file()
        {
            total += metadata.len();
        }
    }
    Ok(total)
}

/// The temporary directory a build writes into, beside its destination; removed unless installed.
///
/// Replacing an index never leaves `--out` without one: on Linux the finished index and the old one
/// swap places in one `renameat2(RENAME_EXCHANGE)`, so at every instant `--out` opens as the old
/// index or the new one. Where the exchange is not supported, the old index is moved aside
/// (`.NAME.building-PID.old`) before the new one moves in; a build killed between the two renames
/// leaves `--out` missing and the aside copy whole, and the next build puts it back before anything
/// else ([`restore_set_aside`]). An aside copy is never deleted while `--out` is missing.
struct Staging {
    dir: PathBuf,
    out: PathBuf,
}

impl Staging {
    fn new(out: &Path) -> Result<Staging, IndexError> {
        let name = out
            .file_name()
            .ok_or_else(|| IndexError::BadOut { out: out.to_owned() })?
            .to_string_lossy()
            .into_owned();
        let parent = match out.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        restore_set_aside(&parent, &name, out)?;
        // Refused before any reading: only an index (or nothing, or an empty directory) is replaced.
        check_replaceable(out)?;
        std::fs::create_dir_all(&parent).map_err(|source| IndexError::Write {
            path: parent.clone(),
            source,
        })?;
        remove_stale_staging(&parent, &name, out);
        let dir = parent.join(format!(".{name}.building-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|source| IndexError::Write {
            path: dir.clone(),
            source,
        })?;
        Ok(Staging {
            dir,
            out: out.to_owned(),
        })
    }

    /// Moves the finished index into place, replacing an older one: exchanged with it in one step
    /// where the system can, else moved in after it is set aside (and put back if the move fails).
    fn install(self) -> Result<PathBuf, IndexError> {
        let write_error = |path: &Path| {
            let path = path.to_owned();
            move |source| IndexError::Write { path, source }
        };
        if self.out.exists() {
            check_replaceable(&self.out)?;
            match exchange(&self.dir, &self.out) {
                // The old index now sits in the staging directory, which `drop` removes.
                Ok(Exchange::Done) => sync_parent(&self.out).map_err(write_error(&self.out))?,
                Ok(Exchange::Unsupported) => self.install_aside()?,
                Err(source) => {
                    return Err(IndexError::Write {
                        path: self.out.clone(),
                        source,
                    });
                }
            }
        } else {
            std::fs::rename(&self.dir, &self.out).map_err(write_error(&self.out))?;
            sync_parent(&self.out).map_err(write_error(&self.out))?;
        }
        Ok(self.out.clone())
    }

    /// The fallback: the old index set aside, the new one moved in, the old one removed. Between
    /// the two renames `--out` is missing; the aside copy is what the next build restores.
    fn install_aside(&self) -> Result<(), IndexError> {
        let aside = PathBuf::from(format!("{}{ASIDE_SUFFIX}", self.dir.display()));
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::rename(&self.out, &aside).map_err(|source| IndexError::Write {
            path: self.out.clone(),
            source,
        })?;
        if let Err(source) = std::fs::rename(&self.dir, &self.out) {
            let _ = std::fs::rename(&aside, &self.out);
            return Err(IndexError::Write {
                path: self.out.clone(),
                source,
            });
        }
        let _ = sync_parent(&self.out);
        let _ = std::fs::remove_dir_all(&aside);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Not installed: the partial index. Installed by exchange: the old index, now replaced.
        // Installed by a rename: nothing is left at this path.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What [`exchange`] could do.
enum Exchange {
    Done,
    /// The system or the file system has no atomic exchange: nothing was changed.
    Unsupported,
}

/// Swaps two directories in one step (Linux `renameat2` with `RENAME_EXCHANGE`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<Exchange> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c_path = |path: &Path| {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
    };
    let (a, b) = (c_path(a)?, c_path(b)?);
    // SAFETY: both pointers are to NUL-terminated strings that live until the call returns;
    // `renameat2` reads them and touches no other memory of ours.
    let status = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if status == 0 {
        return Ok(Exchange::Done);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        // The file system does not support the flag, or the kernel predates the call (3.15).
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(Exchange::Unsupported),
        _ => Err(error),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<Exchange> {
    Ok(Exchange::Unsupported)
}

/// How the fallback names the old index it set aside: the staging directory's name with this.
const ASIDE_SUFFIX: &str = ".old";

/// The build (its process id) that named a staging directory or an aside copy of `name`, and
/// whether it is an aside copy.
fn staging_owner(file_name: &str, name: &str) -> Option<(u32, bool)> {
    let rest = file_name.strip_prefix(&format!(".{name}.building-"))?;
    let (pid, aside) = match rest.strip_suffix(ASIDE_SUFFIX) {
        Some(pid) => (pid, true),
        None => (rest, false),
    };
    Some((pid.parse().ok()?, aside))
}

/// Puts back the index a killed build had set aside and not replaced (`out` missing, an aside
/// copy of a build whose process is gone): `out` opens as the old index again.
fn restore_set_aside(parent: &Path, name: &str, out: &Path) -> Result<(), IndexError> {
    if !holds_nothing(out) {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Ok(());
    };
    let mut asides: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            staging_owner(&entry.file_name().to_string_lossy(), name)
                .is_some_and(|(pid, aside)| aside && !process_is_alive(pid))
        })
        .map(|entry| entry.path())
        .collect();
    asides.sort();
    let Some(aside) = asides.into_iter().find(|aside| is_index_dir(aside)) else {
        return Ok(());
    };
    std::fs::rename(&aside, out).map_err(|source| IndexError::Write {
        path: out.to_owned(),
        source,
    })?;
    sync_parent(out).map_err(|source| IndexError::Write {
        path: out.to_owned(),
        source,
    })
}

/// Refuses to replace `out` unless it is missing, an empty directory, or an index holding nothing
/// but an index's files: a file of the user's inside an index would go with it.
fn check_replaceable(out: &Path) -> Result<(), IndexError> {
    if !out.exists() {
        return Ok(());
    }
    if !(out.is_dir() && (is_index_dir(out) || is_empty_dir(out))) {
        return Err(IndexError::OutNotIndex { out: out.to_owned() });
    }
    let others = not_of_an_index(out);
    if others.is_empty() {
        return Ok(());
    }
    let mut named: Vec<String> = others.iter().take(8).map(|name| format!("`{name}`")).collect();
    if others.len() > named.len() {
        named.push("…".to_owned());
    }
    Err(IndexError::OutHoldsOthers {
        out: out.to_owned(),
        others: named.join(", "),
    })
}

/// What the index directory `dir` holds that no index has, in name order (a directory with `/`):
/// an index has its manifest, title and neighbour tables, tantivy's `meta.json`, `.managed.json`
/// and lock files, and the segment files `.managed.json` lists.
fn not_of_an_index(dir: &Path) -> Vec<String> {
    let Ok(items) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let managed: Vec<String> = std::fs::read(dir.join(".managed.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let own = [
        super::manifest::MANIFEST_FILE,
        super::title_table::TITLES_FILE,
        super::neighbours::NEIGHBOURS_FILE,
        "meta.json",
        ".managed.json",
        ".tantivy-meta.lock",
        ".tantivy-writer.lock",
    ];
    let mut others: Vec<String> = items
        .flatten()
        .filter_map(|item| {
            let name = item.file_name().to_string_lossy().into_owned();
            let is_file = item.file_type().is_ok_and(|file_type| file_type.is_file());
            if is_file && (own.contains(&name.as_str()) || managed.contains(&name)) {
                None
            } else if is_file {
                Some(name)
            } else {
                Some(format!("{name}/"))
            }
        })
        .collect();
    others.sort();
    others
}

/// An index built by this tool, complete (a manifest) or not (tantivy's own bookkeeping files).
fn is_index_dir(path: &Path) -> bool {
    Manifest::path(path).exists() || (path.join("meta.json").exists() && path.join(".managed.json").exists())
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// Nothing at `path`, or an empty directory: no index to lose.
fn holds_nothing(path: &Path) -> bool {
    path.symlink_metadata().is_err() || is_empty_dir(path)
}

/// Removes what builds of `name` that were killed left behind (their process is gone): partial
/// indexes, old indexes already replaced — and an aside copy only while `out` holds an index.
fn remove_stale_staging(parent: &Path, name: &str, out: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let out_present = !holds_nothing(out);
    for entry in entries.flatten() {
        let Some((pid, aside)) = staging_owner(&entry.file_name().to_string_lossy(), name) else {
            continue;
        };
        if !process_is_alive(pid) && (out_present || !aside) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl BuildReport {
    /// The closing summary: pages, time, rate, malformed records, snapshot.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let manifest = &self.manifest;
        let rate = manifest.pages as f64 / manifest.build_seconds.max(0.001);
        writeln!(
            out,
            "indexed {} pages from {} source{} in {:.1} s ({} pages/s) into {}",
            thousands(manifest.pages),
            manifest.sources.len(),
            if manifest.sources.len() == 1 { "" } else { "s" },
            manifest.build_seconds,
            thousands(rate as u64),
            self.dir.display()
        )?;
        if manifest.malformed > 0 {
            writeln!(
                out,
                "skipped {} malformed record{} (shown on stderr; --strict stops at the first)",
                thousands(manifest.malformed),
                if manifest.malformed == 1 { "" } else { "s" }
            )?;
        }
        writeln!(out, "snapshot {}", manifest.snapshot)
    }
}

#[cfg(test)]
mod staging_tests {
    use super::*;

    /// A directory that reads as an index (tantivy's bookkeeping files), holding `marker`.
    fn fake_index(path: &Path, marker: &str) {
        std::fs::create_dir_all(path).unwrap();
        std::fs::write(path.join("meta.json"), marker).unwrap();
        std::fs::write(path.join(".managed.json"), "[]").unwrap();
    }

    fn marker(path: &Path) -> String {
        std::fs::read_to_string(path.join("meta.json")).unwrap()
    }

    #[test]
    fn both_ways_of_installing_replace_the_old_index_and_leave_nothing_beside_it() {
        for exchange_supported in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("wiki");
            fake_index(&out, "old");
            let staging = Staging::new(&out).unwrap();
            fake_index(&staging.dir, "new");
            if exchange_supported {
                assert!(matches!(staging.install(), Ok(path) if path == out));
            } else {
                staging.install_aside().unwrap();
                drop(staging);
            }
            assert_eq!(marker(&out), "new");
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            assert_eq!(names, ["wiki"]);
        }
    }

    #[test]
    fn an_exchange_swaps_two_directories_or_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fake_index(&a, "a");
        fake_index(&b, "b");
        match exchange(&a, &b).unwrap() {
            Exchange::Done => assert_eq!((marker(&a), marker(&b)), ("b".to_owned(), "a".to_owned())),
            Exchange::Unsupported => assert_eq!((marker(&a), marker(&b)), ("a".to_owned(), "b".to_owned())),
        }
    }

    #[test]
    fn staging_names_tell_their_build_and_aside_copies() {
        assert_eq!(staging_owner(".wiki.building-42", "wiki"), Some((42, false)));
        assert_eq!(staging_owner(".wiki.building-42.old", "wiki"), Some((42, true)));
        assert_eq!(staging_owner(".wiki2.building-42", "wiki"), None);
        assert_eq!(staging_owner(".wiki.building-x", "wiki"), None);
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// `n` JSON Lines pages of about 100 bytes whose titles all tie for the search `Generated pages`.
    fn tying_pages(n: usize) -> String {
        let page = |idx: usize| {
            let title = format!("Generated page {idx}");
            let text = format!("{title} is one of many generated pages, number {idx}.");
            serde_json::json!({ "title": title, "text": text }).to_string() + "\n"
        };
        (0..n).map(page).collect()
    }

    #[test]
    fn ranges_follow_the_budget_yet_give_every_thread_two_of_a_small_dump() {
        const MIB: usize = 1 << 20;
        // 5.2 M pages (14.2 GB): the budget decides, up to 512 MiB.
        assert_eq!(default_range_bytes(2048 * MIB, 2, 14_216_943_235), 512 * MIB);
        assert_eq!(default_range_bytes(512 * MIB, 2, 14_216_943_235), 128 * MIB);
        // 200k pages (534 MB) under 2 GiB: four ranges, two a thread, not one of 512 MiB.
        assert_eq!(default_range_bytes(2048 * MIB, 2, 534_248_460), 534_248_460 / 4);
        assert_eq!(default_range_bytes(2048 * MIB, 1, 534_248_460), 534_248_460 / 2);
        assert_eq!(default_range_bytes(2048 * MIB, 2, 1_000), MIN_RANGE_BYTES);
    }

    #[test]
    fn the_default_memory_is_an_eighth_of_a_cgroup_limit_or_of_the_machine() {
        let files = |path: &str| match path {
            "/sys/fs/cgroup/job/memory.max" => Some("4294967296\n".to_owned()),
            "/sys/fs/cgroup/free/memory.max" => Some("max\n".to_owned()),
            "/sys/fs/cgroup/memory/slurm/job_7/memory.limit_in_bytes" => Some("8589934592".to_owned()),
            _ => None,
        };
        assert_eq!(cgroup_limit("0::/job\n", files), Some(4 << 30));
        assert_eq!(cgroup_limit("0::/free\n", files), None);
        assert_eq!(cgroup_limit("0::/gone\n", files), None);
        let v1 = "12:cpu,cpuacct:/slurm/job_7\n5:memory:/slurm/job_7\n";
        assert_eq!(cgroup_limit(v1, files), Some(8 << 30));
        assert!(DEFAULT_MEMORY.contains(&default_memory_bytes()));
    }

    #[test]
    fn ranges_of_several_segments_stack_into_one_in_dump_order() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("pages.jsonl");
        std::fs::write(&source, tying_pages(30_000)).unwrap();
        let mut first_similar = Vec::new();
        // Ranges of one work item, each thread's segment of a range ended at the next, and one
        // range for the whole dump.
        for (threads, range_bytes) in [(3, 1), (2, 1), (1, usize::MAX)] {
            let mut config = BuildConfig::new(vec![source.clone()], dir.path().join(format!("{threads}")));
            config.threads = threads;
            let report = build_in_ranges(&config, &AtomicBool::new(false), Some(range_bytes)).unwrap();
            assert_eq!(report.manifest.pages, 30_000);
            assert!(
                !report.dir.join(PARTS_DIR).exists(),
                "the ranges' segments are removed"
            );
            let index = Index::open_in_dir(&report.dir).unwrap();
            let searcher = index.reader().unwrap().searcher();
            assert_eq!(searcher.segment_readers().len(), 1);
            let ordinals = searcher.segment_reader(0).fast_fields().u64("ordinal").unwrap();
            let ordinals: Vec<u64> = (0..30_000).map(|doc| ordinals.first(doc).unwrap()).collect();
            assert!(
                ordinals.windows(2).all(|pair| pair[0] < pair[1]),
                "{threads} threads: dump order"
            );
            // The title terms are left empty: a dump's search finds titles in its title table.
            let schema = WikiSchema::of(&index).unwrap();
            let terms = |field| {
                searcher
                    .segment_reader(0)
                    .inverted_index(field)
                    .unwrap()
                    .terms()
                    .num_terms()
            };
            let title_terms = [schema.title_exact, schema.title_folded, schema.title_key].map(terms);
            assert_eq!(title_terms, [0, 0, 0]);
            let (pages, _) = super::super::PageIndex::open(&report.dir).unwrap();
            // The table, gathered from every range's segment, finds each page by its title.
            for idx in (0..30_000).step_by(7).chain([29_999]) {
                let title = format!("Generated page {idx}");
                match pages.search(&title.to_uppercase()).unwrap() {
                    super::super::SearchHit::Page(page) => assert_eq!(page.title, title, "{threads} threads"),
                    other => panic!("{threads} threads, {title}: {other:?}"),
                }
            }
            first_similar.push(pages.search("Generated pages").unwrap());
        }
        assert!(first_similar.iter().all(|hit| *hit == first_similar[0]));
    }
}
