//! `ResultsFile`: the `--out` JSON Lines file — one finished run a line, appended at once, read back to resume.
//!
//! Each run is written with a single `write` of the whole line on a file opened for appending,
//! synchronously: dropping the evaluation (Ctrl-C, a crash of the caller) can never leave half a
//! line from a cancelled future. A process killed mid-write can; the torn last line is dropped
//! when the file is opened again.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::run::{Run, Stopped};

/// An open results file, ready to take more runs.
#[derive(Debug)]
pub struct ResultsFile {
    path: PathBuf,
    file: File,
}

/// What a results file already held.
#[derive(Debug, Default)]
pub struct StoredRuns {
    pub runs: Vec<Run>,
    /// Bytes of a torn last line (a write cut short) that were dropped.
    pub torn_bytes: usize,
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
    #[error("results file `{}`, line {line}: field `id` is missing", path.display())]
    MissingId { path: PathBuf, line: usize },
    #[error("cannot write results file `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ResultsFile {
    /// Opens `path` for appending (creating it), returning the runs it already holds. A torn last
    /// line is cut off the file so the next run starts on a line of its own.
    pub fn open(path: &Path) -> Result<(ResultsFile, StoredRuns), ResultsError> {
        let write_error = |source| ResultsError::Write {
            path: path.to_owned(),
            source,
        };
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(ResultsError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let (stored, valid_len) = parse_runs(&text, path)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(write_error)?;
        if stored.torn_bytes > 0 {
            file.set_len(valid_len as u64).map_err(write_error)?;
        } else if !text.is_empty() && !text.ends_with('\n') {
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
        let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
            path: path.to_owned(),
            source,
        })?;
        Ok(parse_runs(&text, path)?.0)
    }

    /// Removes the runs that ended in an error (`stopped: error`), so `eval --retry-errors` runs
    /// their questions again; returns how many were removed. The file is rewritten to a temporary
    /// file and renamed into place: a crash leaves either the old file or the new one.
    pub fn drop_errors(path: &Path) -> Result<usize, ResultsError> {
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(source) => {
                return Err(ResultsError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let (stored, _) = parse_runs(&text, path)?;
        let kept: Vec<&Run> = stored
            .runs
            .iter()
            .filter(|run| run.stopped != Some(Stopped::Error))
            .collect();
        let n_dropped = stored.runs.len() - kept.len();
        if n_dropped == 0 {
            return Ok(0);
        }
        let mut rewritten = String::new();
        for run in kept {
            // invariant: a `Run` (strings, numbers, string-keyed structs) always serializes
            rewritten.push_str(&serde_json::to_string(run).expect("a run always serializes"));
            rewritten.push('\n');
        }
        let write_error = |source| ResultsError::Write {
            path: path.to_owned(),
            source,
        };
        let file_name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{file_name}.retry-errors.tmp"));
        std::fs::write(&tmp, rewritten).map_err(write_error)?;
        std::fs::rename(&tmp, path).map_err(write_error)?;
        Ok(n_dropped)
    }

    /// Appends one run as a line, in one write.
    pub fn append(&mut self, run: &Run) -> Result<(), ResultsError> {
        // invariant: a `Run` (strings, numbers, string-keyed structs) always serializes
        let mut line = serde_json::to_string(run).expect("a run always serializes");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
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

/// The runs of a results file's text, and the length of its valid part (without a torn last line).
fn parse_runs(text: &str, path: &Path) -> Result<(StoredRuns, usize), ResultsError> {
    let mut stored = StoredRuns::default();
    let mut offset = 0;
    for (line_idx, line) in text.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += line.len();
        if line.trim().is_empty() {
            continue;
        }
        let is_unterminated_last = !line.ends_with('\n');
        match serde_json::from_str::<Run>(line) {
            Ok(run) if run.id.is_none() => {
                return Err(ResultsError::MissingId {
                    path: path.to_owned(),
                    line: line_idx + 1,
                });
            }
            Ok(run) => stored.runs.push(run),
            Err(_) if is_unterminated_last => {
                stored.torn_bytes = line.len();
                return Ok((stored, line_start));
            }
            Err(source) => {
                return Err(ResultsError::Parse {
                    path: path.to_owned(),
                    line: line_idx + 1,
                    source,
                });
            }
        }
    }
    Ok((stored, text.len()))
}
