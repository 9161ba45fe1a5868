//! `ResultsFile`: the `--out` JSON Lines file — one finished run a line, appended at once, read back to resume.
//!
//! One process writes a results file at a time: opening it takes an exclusive OS lock
//! ([`File::try_lock`]), held until the `ResultsFile` is dropped (or the process exits), and a
//! second opener is refused at once. Each run is written with a single `write` of the whole line
//! on a file opened for appending, synchronously: dropping the evaluation (Ctrl-C, a crash of the
//! caller) can never leave half a line from a cancelled future. A process killed mid-write can;
//! the torn last line is dropped when the file is opened again. The file is read as bytes, so a
//! line that is not UTF-8 is reported, never decoded lossily.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::fsutil::AtomicFile;
use crate::record::recorded::{RecordedRun, RunPlace, run_line};
use crate::record::run::Run;

/// An open results file, locked, ready to take more runs.
#[derive(Debug)]
pub struct ResultsFile {
    path: PathBuf,
    file: File,
}

/// What a results file already held.
#[derive(Debug, Default)]
pub struct StoredRuns {
    /// The runs, each with its line.
    pub runs: Vec<RecordedRun>,
    /// Bytes of a torn last line (a write cut short) that were dropped.
    pub torn_bytes: usize,
}

/// The runs of a JSON Lines file, each with its line.
#[derive(Debug, Default)]
pub struct RunLines {
    pub runs: Vec<RecordedRun>,
    /// Bytes of an unterminated last line that is not a run (a write cut short).
    pub torn_bytes: usize,
    /// Bytes up to the end of the last whole line: where a torn line starts.
    pub valid_len: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("results file `{}`, line {line}: not a run", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "`{}` is {}, not results: `eval {}` runs its questions, and `score RESULTS {}` scores results against it",
        path.display(),
        crate::record::questions::describe(*task),
        path.display(),
        path.display()
    )]
    QuestionFile {
        path: PathBuf,
        task: crate::base::task::Task,
    },
    #[error("results file `{}`, line {line}: not valid UTF-8", path.display())]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        #[source]
        source: std::str::Utf8Error,
    },
    #[error("results file `{}`, line {line}: field `id` is missing", path.display())]
    MissingId { path: PathBuf, line: usize },
    #[error(
        "results file `{}` is in use by another evaluation (it holds the file's lock); wait for it to finish or choose another `--out`",
        path.display()
    )]
    Locked { path: PathBuf },
    #[error("cannot lock results file `{}`", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write results file `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ResultsFile {
    /// Opens `path` for appending (creating it) under an exclusive lock, returning the runs it
    /// already holds. Refused at once ([`ResultsError::Locked`]) while another process holds the
    /// lock. A torn last line is cut off the file so the next run starts on a line of its own.
    pub fn open(path: &Path) -> Result<(ResultsFile, StoredRuns), ResultsError> {
        let write_error = |source| ResultsError::Write {
            path: path.to_owned(),
            source,
        };
        let mut file = open_locked(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|source| ResultsError::Read {
                path: path.to_owned(),
                source,
            })?;
        let lines = parse_run_lines(&bytes, path)?;
        let valid_len = lines.valid_len;
        let stored = with_ids(lines, path)?;
        if stored.torn_bytes > 0 {
            file.set_len(valid_len as u64).map_err(write_error)?;
        } else if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            file.write_all(b"\n").map_err(write_error)?;
        }
        let results = ResultsFile {
            path: path.to_owned(),
            file,
        };
        Ok((results, stored))
    }

    /// Reads the runs of a results file without opening it for writing (for `score`).
    pub fn read(path: &Path) -> Result<StoredRuns, ResultsError> {
        let bytes = std::fs::read(path).map_err(|source| ResultsError::Read {
            path: path.to_owned(),
            source,
        })?;
        with_ids(parse_run_lines(&bytes, path)?, path)
    }

    /// Removes the runs `drop` picks from the file and from `stored`, so `eval` asks their
    /// questions again; returns how many were removed. The kept runs' lines are written as they
    /// were read, byte for byte ([`RecordedRun::results_line`]: fields this version does not know
    /// survive), to a temporary file, locked, and renamed into place: a crash leaves either the
    /// old file or the new one, and the lock is held throughout (an evaluation that opened the old
    /// file before the rename finds it replaced and is refused).
    pub fn drop_runs(
        &mut self,
        stored: &mut StoredRuns,
        drop: impl Fn(&RecordedRun) -> bool,
    ) -> Result<usize, ResultsError> {
        let n_before = stored.runs.len();
        stored.runs.retain(|line| !drop(line));
        let n_dropped = n_before - stored.runs.len();
        if n_dropped == 0 {
            return Ok(0);
        }
        let mut rewritten = Vec::new();
        for line in &stored.runs {
            rewritten.extend(line.results_line());
        }
        self.replace_with(&rewritten)?;
        Ok(n_dropped)
    }

    /// Moves every run of the file to `aside` (written whole first), leaving the file empty:
    /// runs of another evaluation that hold no finished question, kept rather than lost.
    pub fn set_aside(&mut self, stored: &mut StoredRuns, aside: &Path) -> Result<(), ResultsError> {
        // The file's bytes as they are, not the runs as this version would write them.
        let bytes = std::fs::read(&self.path).map_err(|source| ResultsError::Read {
            path: self.path.clone(),
            source,
        })?;
        crate::base::fsutil::atomic_write(aside, &bytes).map_err(|source| ResultsError::Write {
            path: aside.to_owned(),
            source,
        })?;
        stored.runs.clear();
        self.replace_with(&[])
    }

    /// Replaces the file's bytes, durably, keeping the lock throughout.
    fn replace_with(&mut self, bytes: &[u8]) -> Result<(), ResultsError> {
        let write_error = |source| ResultsError::Write {
            path: self.path.clone(),
            source,
        };
        let mut rewrite = AtomicFile::create(&self.path).map_err(write_error)?;
        rewrite.file().try_lock().map_err(|error| ResultsError::Lock {
            path: self.path.clone(),
            source: error.into(),
        })?;
        rewrite.write_all(bytes).map_err(write_error)?;
        let file = rewrite.commit().map_err(write_error)?;
        // The old file's lock goes with its handle, after the new file is locked in its place.
        self.file = file;
        // What an earlier rewrite killed mid-write left beside the file.
        crate::base::fsutil::remove_stale_temporaries(&self.path);
        Ok(())
    }

    /// Appends one run as a line, in one write.
    pub fn append(&mut self, run: &Run) -> Result<(), ResultsError> {
        let line = run_line(run);
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(|source| ResultsError::Write {
                path: self.path.clone(),
                source,
            })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens `path` for reading and appending, creating it, and takes its exclusive lock.
fn open_locked(path: &Path) -> Result<File, ResultsError> {
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|source| ResultsError::Write {
            path: path.to_owned(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(ResultsError::Locked {
                path: path.to_owned(),
            });
        }
        Err(TryLockError::Error(source)) => {
            return Err(ResultsError::Lock {
                path: path.to_owned(),
                source,
            });
        }
    }
    // Between our open and our lock, the lock holder may have renamed a rewrite into place
    // (`--retry-errors`): the file we locked is then not the file at `path`, and it is in use.
    if !is_file_at(&file, path) {
        return Err(ResultsError::Locked {
            path: path.to_owned(),
        });
    }
    Ok(file)
}

/// Whether `file` is the file `path` names now.
#[cfg(unix)]
fn is_file_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Whether `file` is the file `path` names now (without inode numbers: assumed).
#[cfg(not(unix))]
fn is_file_at(_file: &File, _path: &Path) -> bool {
    true
}

/// The runs of a JSON Lines file's bytes, each with its line. Blank lines are skipped; a file
/// that is a question file ([`crate::record::questions::recognise`]) is refused saying so; an
/// unterminated last line that is not a run is a torn write, counted and left out; any other
/// line that is not UTF-8 or not a run is an error naming the file and the line.
pub fn parse_run_lines(bytes: &[u8], path: &Path) -> Result<RunLines, ResultsError> {
    let mut lines = RunLines::default();
    let file: Arc<Path> = Arc::from(path);
    let mut offset = 0;
    for (line_idx, line) in bytes.split_inclusive(|&byte| byte == b'\n').enumerate() {
        let line_start = offset;
        offset += line.len();
        let is_unterminated_last = !line.ends_with(b"\n");
        let parsed = std::str::from_utf8(line)
            .map_err(|source| ResultsError::NotUtf8 {
                path: path.to_owned(),
                line: line_idx + 1,
                source,
            })
            .and_then(|text| {
                if text.trim().is_empty() {
                    return Ok(None);
                }
                serde_json::from_str::<Run>(text)
                    .map(Some)
                    .map_err(|source| ResultsError::Parse {
                        path: path.to_owned(),
                        line: line_idx + 1,
                        source,
                    })
            });
        match parsed {
            Ok(Some(run)) => lines.runs.push(RecordedRun {
                place: RunPlace {
                    file: Arc::clone(&file),
                    line: Some(line_idx + 1),
                },
                run,
                line_bytes: Some(Arc::from(line.strip_suffix(b"\n").unwrap_or(line))),
            }),
            Ok(None) => {}
            // A question file is named before a cut last line is guessed at: ReAct's question
            // files are one JSON array on one line with no newline after it.
            Err(error) => match crate::record::questions::recognise(bytes) {
                Some(task) => {
                    return Err(ResultsError::QuestionFile {
                        path: path.to_owned(),
                        task,
                    });
                }
                None if is_unterminated_last => {
                    lines.torn_bytes = line.len();
                    lines.valid_len = line_start;
                    return Ok(lines);
                }
                None => return Err(error),
            },
        }
    }
    lines.valid_len = bytes.len();
    Ok(lines)
}

/// The runs of a results file, each of which must carry its question's `id`.
fn with_ids(lines: RunLines, path: &Path) -> Result<StoredRuns, ResultsError> {
    let mut stored = StoredRuns {
        runs: Vec::with_capacity(lines.runs.len()),
        torn_bytes: lines.torn_bytes,
    };
    for run_line in lines.runs {
        if run_line.run.id.is_none() {
            return Err(ResultsError::MissingId {
                path: path.to_owned(),
                line: run_line.line(),
            });
        }
        stored.runs.push(run_line);
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_keeps_the_bytes_of_every_line_it_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        // Fields this version does not know, at the top and inside `usage`, spaces no serializer
        // writes, a line ended by `\r\n`.
        let kept = [
            "{ \"id\": \"a\", \"question\": \"q\", \"steps\": [], \"reviewer_note\": \"mine\", \"usage\": {\"llm_calls\": 1, \"cache_read_tokens\": 7}}\r",
            "{\"id\":\"c\",\"question\":\"q\",\"steps\":[],\"answer\":\"é\"}",
        ];
        let dropped = "{\"id\":\"b\",\"question\":\"q\",\"steps\":[]}";
        std::fs::write(&path, format!("{}\n{dropped}\n{}\n", kept[0], kept[1])).unwrap();
        let (mut results, mut stored) = ResultsFile::open(&path).unwrap();
        assert_eq!(
            results.drop_runs(&mut stored, |line| line.id() == "b").unwrap(),
            1
        );
        drop(results);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n{}\n", kept[0], kept[1])
        );
    }
}
