//! Reading dumps as distributed: files and directories, gzip / bzip2 / zstd streams (recognised by
//! their magic bytes), tar and zip containers read in place — cut into [`Work`] items of whole
//! lines, dealt to the indexing threads a range at a time ([`Ranges`]). Runs on one thread;
//! everything it holds is bounded.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

use super::IndexError;
use super::formats::{DumpFormat, NotADump};

/// How many bytes of whole lines one work item carries.
const CHUNK_BYTES: usize = 1 << 20;
/// A line longer than this is reported as malformed and skipped.
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// Compressed members up to this size are handed whole to a parsing thread, which decompresses
/// them (in parallel with the others); larger ones are decompressed here, as a stream.
const MAX_MEMBER_IN_MEMORY: u64 = 32 << 20;

/// A compression recognised by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Bzip2,
    Zstd,
}

impl Compression {
    fn sniff(bytes: &[u8]) -> Option<Compression> {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if bytes.starts_with(b"BZh") {
            Some(Compression::Bzip2)
        } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || is_skippable_frame(bytes) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    /// The decompressed stream.
    pub fn decoder<'a, R: BufRead + 'a>(self, reader: R) -> Box<dyn Read + 'a> {
        match self {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(reader)),
            // mibz2 walks each block's inverse BWT as interleaved chains: on HotpotQA-shaped
            // members about 7x the CPU speed of libbzip2 (docs/performance.md); its streams
            // one after another, every block and stream CRC checked.
            Compression::Bzip2 => Box::new(mibz2::BzReader::new(reader)),
            Compression::Zstd => Box::new(ZstdFrames::new(reader)),
        }
    }
}

/// A zstd skippable frame: magic `0x184D2A50`–`0x184D2A5F`, little-endian.
fn is_skippable_frame(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes[0] & 0xf0 == 0x50 && bytes[1..4] == [0x2a, 0x4d, 0x18]
}

fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

fn is_tar(bytes: &[u8]) -> bool {
    bytes.len() >= 262 && &bytes[257..262] == b"ustar"
}

/// Zstandard frames one after the other (`zstd` writes one, `pzstd` several), decoded by ruzstd.
struct ZstdFrames<R> {
    source: R,
    decoder: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(source: R) -> ZstdFrames<R> {
        ZstdFrames {
            source,
            decoder: FrameDecoder::new(),
            in_frame: false,
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if !self.in_frame {
                if self.source.fill_buf()?.is_empty() {
                    return Ok(0);
                }
                self.decoder
                    .reset(&mut self.source)
                    .map_err(std::io::Error::other)?;
                self.in_frame = true;
            }
            while self.decoder.can_collect() == 0 && !self.decoder.is_finished() {
                self.decoder
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(std::io::Error::other)?;
            }
            let read = self.decoder.read(buf)?;
            if read > 0 || buf.is_empty() {
                return Ok(read);
            }
            if self.decoder.is_finished() {
                self.in_frame = false;
            }
        }
    }
}

/// Counts the bytes read from a source file, for the progress bar and its ETA.
struct Counted<'c, R> {
    inner: R,
    counter: &'c AtomicU64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.counter.fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

impl<R: Seek> Seek for Counted<'_, R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// What one work item holds.
pub enum WorkData {
    /// Whole lines, uncompressed.
    Lines(Vec<u8>),
    /// A whole compressed member (`AA/wiki_00.bz2`), decompressed by the parsing thread.
    Compressed(Compression, Vec<u8>),
}

/// A piece of a dump for one indexing thread.
pub struct Work {
    /// `file` or `file (member)`, for messages.
    pub origin: Arc<str>,
    /// The position in the dump of the file or member the item comes from: with the line, it
    /// orders the pages.
    pub seq: u64,
    /// The number of the item's first line within its file or member (1-based).
    pub first_line: u64,
    pub format: DumpFormat,
    pub data: WorkData,
    /// The stretch of consecutive items this one belongs to ([`Ranges`]): one indexing thread
    /// indexes a whole range, into segments of its own.
    pub range: u64,
}

impl WorkData {
    /// About how many bytes of lines the item holds: a compressed member counts four times its
    /// size (about what text dumps shrink to).
    fn weight(&self) -> usize {
        match self {
            WorkData::Lines(bytes) => bytes.len(),
            WorkData::Compressed(_, bytes) => bytes.len().saturating_mul(4),
        }
    }
}

/// Deals work items to the indexing threads a range at a time: consecutive items, about
/// `range_bytes` of lines in all, go to one thread, and the ranges go to the threads in turn. A
/// thread's segments then each hold a stretch of the dump in dump order, and the segments, taken
/// in range order, stack into one segment in dump order without sorting the pages again.
pub struct Ranges {
    threads: Vec<(Sender<Work>, Arc<Queue>)>,
    range_bytes: usize,
    range: u64,
    filled: usize,
}

impl Ranges {
    /// The dealer and, for each of `threads` indexing threads, the items dealt to it.
    pub fn new(threads: usize, range_bytes: usize) -> (Ranges, Vec<Dealt>) {
        // A thread's queue holds a whole range: while each thread indexes its range, the reading
        // fills the next one, and no thread waits for another's range to be read.
        let capacity = range_bytes.saturating_add(CHUNK_BYTES);
        let (senders, dealt): (Vec<_>, Vec<_>) = (0..threads.max(1))
            .map(|_| {
                let (tx, rx) = crossbeam_channel::unbounded();
                let queue = Arc::new(Queue {
                    state: Mutex::new(QueueState::default()),
                    taken: Condvar::new(),
                    capacity,
                });
                ((tx, queue.clone()), Dealt { rx, queue })
            })
            .unzip();
        let ranges = Ranges {
            threads: senders,
            range_bytes: range_bytes.max(1),
            range: 0,
            filled: 0,
        };
        (ranges, dealt)
    }

    /// Sends `work` to the thread of the current range once its queue has room; `false` when
    /// that thread has stopped, or `abort` was set while waiting.
    fn send(&mut self, mut work: Work, abort: &AtomicBool) -> bool {
        work.range = self.range;
        let weight = work.data.weight();
        let thread = (self.range % self.threads.len() as u64) as usize;
        let Some((sender, queue)) = self.threads.get(thread) else {
            return false;
        };
        if !queue.reserve(weight, abort) || sender.send(work).is_err() {
            return false;
        }
        self.filled = self.filled.saturating_add(weight);
        if self.filled >= self.range_bytes {
            self.range += 1;
            self.filled = 0;
        }
        true
    }
}

/// How many bytes of work wait for one thread, bounded in bytes (items differ in size: 1 MiB of
/// lines, a whole compressed member).
struct Queue {
    state: Mutex<QueueState>,
    taken: Condvar,
    capacity: usize,
}

#[derive(Default)]
struct QueueState {
    queued: usize,
    /// The thread stopped taking items.
    closed: bool,
}

impl Queue {
    /// Waits until `weight` more bytes fit (an item always fits an empty queue); `false` when the
    /// thread stopped or `abort` was set.
    fn reserve(&self, weight: usize, abort: &AtomicBool) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        while state.queued > 0 && state.queued.saturating_add(weight) > self.capacity && !state.closed {
            if abort.load(Ordering::Relaxed) {
                return false;
            }
            state = match self.taken.wait_timeout(state, Duration::from_millis(100)) {
                Ok((state, _)) => state,
                Err(_) => return false,
            };
        }
        if state.closed {
            return false;
        }
        state.queued = state.queued.saturating_add(weight);
        true
    }

    fn release(&self, weight: usize) {
        if let Ok(mut state) = self.state.lock() {
            state.queued = state.queued.saturating_sub(weight);
        }
        self.taken.notify_all();
    }
}

/// The items dealt to one indexing thread, in the order they were dealt; dropping it (the thread
/// stopped) tells the dealer to stop waiting for room.
pub struct Dealt {
    rx: Receiver<Work>,
    queue: Arc<Queue>,
}

impl Iterator for Dealt {
    type Item = Work;

    fn next(&mut self) -> Option<Work> {
        let work = self.rx.recv().ok()?;
        self.queue.release(work.data.weight());
        Some(work)
    }
}

impl Drop for Dealt {
    fn drop(&mut self) {
        if let Ok(mut state) = self.queue.state.lock() {
            state.closed = true;
        }
        self.queue.taken.notify_all();
    }
}

/// A malformed line found while reading (too long), reported like a malformed record.
pub struct ReadIssue {
    pub origin: Arc<str>,
    /// The file or member's position in the dump.
    pub seq: u64,
    pub line: u64,
    pub reason: String,
}

/// How many lines may go by before a source's format is recognised (they are parsed then, and
/// reported if malformed).
const DETECTION_LINES: usize = 100;

/// Feeds the indexing threads: walks the sources in order and deals [`Work`] out by [`Ranges`].
pub struct Feeder<'a> {
    pub ranges: Ranges,
    /// The forced format, or `None` to detect it from each source's first line.
    pub forced: Option<DumpFormat>,
    pub bytes_read: &'a AtomicU64,
    pub abort: &'a AtomicBool,
    pub issues: &'a dyn Fn(ReadIssue),
    seq: u64,
    /// The format of the source being read, once known.
    format: Option<DumpFormat>,
}

impl<'a> Feeder<'a> {
    pub fn new(
        ranges: Ranges,
        forced: Option<DumpFormat>,
        bytes_read: &'a AtomicU64,
        abort: &'a AtomicBool,
        issues: &'a dyn Fn(ReadIssue),
    ) -> Feeder<'a> {
        Feeder {
            ranges,
            forced,
            bytes_read,
            abort,
            issues,
            seq: 0,
            format: None,
        }
    }

    /// Reads one source (a file or a directory) and returns the format it was read as.
    pub fn source(&mut self, path: &Path) -> Result<Option<DumpFormat>, IndexError> {
        self.format = self.forced;
        if path.is_dir() {
            for file in files_under(path)? {
                let name = file.strip_prefix(path).unwrap_or(&file).display().to_string();
                let origin = format!("{} ({name})", path.display());
                self.file(&file, &origin)?;
            }
        } else {
            self.file(path, &path.display().to_string())?;
        }
        Ok(self.format)
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    fn file(&mut self, path: &Path, origin: &str) -> Result<(), IndexError> {
        let read_error = |source| IndexError::Read {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(read_error)?;
        let mut reader = BufReader::with_capacity(
            256 << 10,
            Counted {
                inner: file,
                counter: self.bytes_read,
            },
        );
        let head = reader.fill_buf().map_err(read_error)?.to_vec();
        if is_zip(&head) {
            let counted = reader.into_inner();
            return self.zip(counted, path, origin);
        }
        match Compression::sniff(&head) {
            Some(compression) => self.container(compression.decoder(reader), origin),
            None => self.container(reader, origin),
        }
    }

    /// A decompressed file: a tar archive, or lines.
    fn container(&mut self, reader: impl Read, origin: &str) -> Result<(), IndexError> {
        let (head, reader) = peek(reader, 512).map_err(|source| archive_error(origin, source))?;
        if is_tar(&head) {
            let mut archive = tar::Archive::new(reader);
            let entries = archive
                .entries()
                .map_err(|source| archive_error(origin, source))?;
            for entry in entries {
                if self.aborted() {
                    return Ok(());
                }
                let mut entry = entry.map_err(|source| archive_error(origin, source))?;
                if !entry.header().entry_type().is_file() {
                    continue;
                }
                let name = entry
                    .path()
                    .map(|path| path.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                let member = format!("{origin} ({name})");
                let size = entry.size();
                self.member(&mut entry, size, &member)?;
            }
            return Ok(());
        }
        self.lines(BufReader::with_capacity(256 << 10, reader), origin)
    }

    fn zip(&mut self, file: Counted<'a, File>, path: &Path, origin: &str) -> Result<(), IndexError> {
        let zip_error = |error: zip::result::ZipError| IndexError::Archive {
            origin: origin.to_owned(),
            message: error.to_string(),
        };
        let mut archive = zip::ZipArchive::new(file).map_err(zip_error)?;
        for idx in 0..archive.len() {
            if self.aborted() {
                return Ok(());
            }
            let mut entry = archive.by_index(idx).map_err(zip_error)?;
            if entry.is_dir() {
                continue;
            }
            let name = entry
                .name()
                .map(|name| name.into_owned())
                .unwrap_or_else(|_| "?".to_owned());
            let member = format!("{} ({name})", path.display());
            let size = entry.size();
            self.member(&mut entry, size, &member)?;
        }
        Ok(())
    }

    /// One member of an archive: small compressed members go whole to a parsing thread.
    fn member(&mut self, entry: &mut dyn Read, size: u64, origin: &str) -> Result<(), IndexError> {
        let mut reader = BufReader::with_capacity(256 << 10, entry);
        let head = reader
            .fill_buf()
            .map_err(|source| archive_error(origin, source))?
            .to_vec();
        match Compression::sniff(&head) {
            Some(compression) if size <= MAX_MEMBER_IN_MEMORY => {
                let mut bytes = Vec::with_capacity(size as usize);
                reader
                    .read_to_end(&mut bytes)
                    .map_err(|source| archive_error(origin, source))?;
                let format = match self.format {
                    Some(format) => format,
                    None => {
                        let lines = first_lines(compression.decoder(&bytes[..]))
                            .map_err(|source| archive_error(origin, source))?;
                        if lines.is_empty() {
                            // An empty member holds no pages.
                            return Ok(());
                        }
                        self.detect(&lines, origin)?
                    }
                };
                let seq = self.next_seq();
                self.send(Work {
                    origin: origin.into(),
                    seq,
                    first_line: 1,
                    format,
                    data: WorkData::Compressed(compression, bytes),
                    range: 0,
                });
                Ok(())
            }
            Some(compression) => {
                let stream = BufReader::with_capacity(256 << 10, compression.decoder(reader));
                self.lines(stream, origin)
            }
            None => self.lines(reader, origin),
        }
    }

    /// The format of the first of `lines` that shows one (the others are malformed records).
    fn detect(&mut self, lines: &[Vec<u8>], origin: &str) -> Result<DumpFormat, IndexError> {
        let format = lines
            .iter()
            .find_map(|line| DumpFormat::detect(line))
            .ok_or_else(|| {
                let first = lines.first().map_or(&[][..], Vec::as_slice);
                let origin = origin.to_owned();
                match NotADump::detect(first) {
                    Some(NotADump::JsonArray | NotADump::QuestionLines) => {
                        IndexError::QuestionFile { origin }
                    }
                    Some(NotADump::ClaimLines) => IndexError::ClaimFile { origin },
                    None => IndexError::UnknownFormat {
                        origin,
                        line: String::from_utf8_lossy(&first[..first.len().min(120)]).into_owned(),
                    },
                }
            })?;
        self.format = Some(format);
        Ok(format)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Cuts a stream into work items of whole lines. DPR passages of one title stay together.
    fn lines(&mut self, mut reader: impl BufRead, origin: &str) -> Result<(), IndexError> {
        let origin: Arc<str> = origin.into();
        let seq = self.next_seq();
        let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + (64 << 10));
        let mut line = Vec::new();
        let mut line_no = 0u64;
        let mut chunk_first_line = 1u64;
        let mut last_title: Vec<u8> = Vec::new();
        // Lines read before the format is known (blank or unrecognised), kept in `chunk`.
        let mut undetected: Vec<Vec<u8>> = Vec::new();
        loop {
            if self.aborted() {
                return Ok(());
            }
            line.clear();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(|source| archive_error(&origin, source))?;
            if read == 0 {
                break;
            }
            line_no += 1;
            if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
                skip_line(&mut reader).map_err(|source| archive_error(&origin, source))?;
                (self.issues)(ReadIssue {
                    origin: origin.clone(),
                    seq,
                    line: line_no,
                    reason: format!("the line is longer than {} MiB", MAX_LINE_BYTES >> 20),
                });
                line.clear();
                line.push(b'\n');
            }
            let format = match self.format {
                Some(format) => format,
                None => {
                    let blank = line.iter().all(u8::is_ascii_whitespace);
                    if !blank {
                        undetected.push(line.clone());
                    }
                    let recognised = if blank { None } else { DumpFormat::detect(&line) };
                    match recognised {
                        Some(format) => {
                            self.format = Some(format);
                            format
                        }
                        None if undetected.len() < DETECTION_LINES => {
                            chunk.extend_from_slice(&line);
                            continue;
                        }
                        None => return self.detect(&undetected, &origin).map(|_| ()),
                    }
                }
            };
            let mut cut = chunk.len() >= CHUNK_BYTES;
            if format == DumpFormat::Dpr {
                let title = dpr_title(&line).to_vec();
                // Passages of one title stay in one item (up to 16 items' worth).
                if cut && title == last_title && chunk.len() < 16 * CHUNK_BYTES {
                    cut = false;
                }
                last_title = title;
            }
            if cut {
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES + (64 << 10)));
                self.send_lines(&origin, seq, chunk_first_line, format, full);
                chunk_first_line = line_no;
            }
            chunk.extend_from_slice(&line);
        }
        match self.format {
            Some(format) if !chunk.is_empty() => {
                self.send_lines(&origin, seq, chunk_first_line, format, chunk)
            }
            Some(_) => {}
            // Only blank or unrecognised lines: unrecognised ones name the problem.
            None if !undetected.is_empty() => {
                self.detect(&undetected, &origin)?;
            }
            None => {}
        }
        Ok(())
    }

    fn send_lines(
        &mut self,
        origin: &Arc<str>,
        seq: u64,
        first_line: u64,
        format: DumpFormat,
        bytes: Vec<u8>,
    ) {
        self.send(Work {
            origin: origin.clone(),
            seq,
            first_line,
            format,
            data: WorkData::Lines(bytes),
            range: 0,
        });
    }

    fn send(&mut self, work: Work) {
        // A closed channel means an indexing thread stopped: stop reading too.
        if !self.ranges.send(work, self.abort) {
            self.abort.store(true, Ordering::Relaxed);
        }
    }
}

fn archive_error(origin: &str, source: std::io::Error) -> IndexError {
    IndexError::Archive {
        origin: origin.to_owned(),
        message: source.to_string(),
    }
}

/// The first `len` bytes of `reader` (fewer at its end), and the whole stream again.
fn peek(mut reader: impl Read, len: usize) -> std::io::Result<(Vec<u8>, impl Read)> {
    let mut head = Vec::with_capacity(len);
    (&mut reader).take(len as u64).read_to_end(&mut head)?;
    Ok((head.clone(), std::io::Cursor::new(head).chain(reader)))
}

/// Skips the rest of an overlong line.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match memchr::memchr(b'\n', buffer) {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
}

/// The first non-blank lines of a stream (at most [`DETECTION_LINES`], bounded in bytes).
fn first_lines(reader: impl Read) -> std::io::Result<Vec<Vec<u8>>> {
    let mut reader = BufReader::new(reader.take(MAX_LINE_BYTES as u64));
    let mut lines = Vec::new();
    let mut line = Vec::new();
    while lines.len() < DETECTION_LINES {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            lines.push(line.clone());
        }
    }
    Ok(lines)
}

/// The last tab-separated field of a DPR line: its title.
fn dpr_title(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match memchr::memrchr(b'\t', line) {
        Some(tab) => &line[tab + 1..],
        None => line,
    }
}

/// Every file under `dir`, recursively, in name order; hidden files are left out.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| IndexError::Read {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| IndexError::Read {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            // Symbolic links to directories are not followed (no loops); only regular files (and
            // links to them) are read, never a FIFO or a device.
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                pending.push(path);
            } else if path.metadata().is_ok_and(|metadata| metadata.is_file()) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The lines of a work item, each with its number, decompressing a whole member on the way.
pub fn for_each_line(
    work: &Work,
    mut line: impl FnMut(u64, &[u8]),
    mut issue: impl FnMut(ReadIssue),
) -> std::io::Result<()> {
    match &work.data {
        WorkData::Lines(bytes) => {
            for (number, text) in (work.first_line..).zip(bytes.split(|&byte| byte == b'\n')) {
                if !text.is_empty() {
                    line(number, text);
                }
            }
        }
        WorkData::Compressed(compression, bytes) => {
            let mut reader = BufReader::with_capacity(256 << 10, compression.decoder(&bytes[..]));
            let mut buffer = Vec::new();
            let mut number = work.first_line;
            loop {
                buffer.clear();
                let read = (&mut reader)
                    .take(MAX_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut buffer)?;
                if read == 0 {
                    return Ok(());
                }
                if buffer.len() > MAX_LINE_BYTES && !buffer.ends_with(b"\n") {
                    skip_line(&mut reader)?;
                    issue(ReadIssue {
                        origin: work.origin.clone(),
                        seq: work.seq,
                        line: number,
                        reason: format!("the line is longer than {} MiB", MAX_LINE_BYTES >> 20),
                    });
                } else {
                    let text = buffer.strip_suffix(b"\n").unwrap_or(&buffer);
                    if !text.is_empty() {
                        line(number, text);
                    }
                }
                number += 1;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: usize) -> Work {
        Work {
            origin: "dump.jsonl".into(),
            seq: 1,
            first_line: 1,
            format: DumpFormat::Hotpotqa,
            data: WorkData::Lines(vec![b'x'; bytes]),
            range: 0,
        }
    }

    #[test]
    fn consecutive_items_go_to_one_thread_a_range_at_a_time_and_the_ranges_in_turn() {
        let (mut ranges, dealt) = Ranges::new(2, 10);
        let abort = AtomicBool::new(false);
        for bytes in [4, 4, 4, 10, 3, 3, 3, 3, 1] {
            assert!(ranges.send(lines(bytes), &abort));
        }
        drop(ranges);
        let dealt: Vec<Vec<(u64, usize)>> = dealt
            .into_iter()
            .map(|items| items.map(|work| (work.range, work.data.weight())).collect())
            .collect();
        assert_eq!(dealt[0], [(0, 4), (0, 4), (0, 4), (2, 3), (2, 3), (2, 3), (2, 3)]);
        assert_eq!(dealt[1], [(1, 10), (3, 1)]);
    }

    #[test]
    fn a_full_queue_waits_for_its_thread_and_a_stopped_thread_stops_the_dealing() {
        let (mut ranges, mut dealt) = Ranges::new(1, 2 * CHUNK_BYTES);
        let abort = AtomicBool::new(false);
        // Three items fill the queue (two chunks and one more); the fourth waits for room.
        for _ in 0..3 {
            assert!(ranges.send(lines(CHUNK_BYTES), &abort));
        }
        std::thread::scope(|scope| {
            let dealing = scope.spawn(|| ranges.send(lines(CHUNK_BYTES), &abort));
            assert!(dealt[0].next().is_some());
            assert!(dealing.join().unwrap());
        });
        drop(dealt);
        assert!(!ranges.send(lines(1), &abort));
    }
}
