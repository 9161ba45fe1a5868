//! `RecordedRun`: a run and the place it was read from ([`RunPlace`]: its file, and its line in a
//! JSON Lines file) — the one shape in which every reader of recorded runs (`replay`, `export`,
//! `merge`, `score`, `compare`, `report`, `--fewshot-from`) holds them. A run read from a line
//! keeps that line's bytes: a command that writes the line again (`eval`'s resume, `merge`) writes
//! them, never the run as this version would spell it, so fields it does not know survive.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::record::run::Run;

/// Where a recorded run was read from: a file, and its line (from 1) in a JSON Lines file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPlace {
    /// Written as text, lossily when the name is not UTF-8.
    #[serde(serialize_with = "serialize_lossy")]
    pub file: Arc<Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

fn serialize_lossy<S: serde::Serializer>(path: &Arc<Path>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

impl fmt::Display for RunPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        Ok(())
    }
}

/// A recorded run and where it was read from.
#[derive(Debug, Clone)]
pub struct RecordedRun {
    pub place: RunPlace,
    pub run: Run,
    /// The bytes of its line as read, without the `\n` that ends it, for a run read from a JSON
    /// Lines file; `None` for a run file's single run.
    pub line_bytes: Option<Arc<[u8]>>,
}

impl RecordedRun {
    /// The run's question id; `""` for a run without one (`ask --record`'s). Every results line
    /// has one: `evaluation::read_evaluation` refuses a line without.
    pub fn id(&self) -> &str {
        self.run.id.as_deref().unwrap_or_default()
    }

    /// Its line in a JSON Lines file, from 1; 0 for a single run's file.
    pub fn line(&self) -> usize {
        self.place.line.unwrap_or(0)
    }

    /// The run as a line of a results file, `\n` included: the bytes it was read from when it was
    /// read from a line — fields this version does not know, and the line's own spelling, kept —
    /// else the run as this version writes it.
    pub fn results_line(&self) -> Vec<u8> {
        match &self.line_bytes {
            Some(bytes) => {
                let mut line = Vec::with_capacity(bytes.len() + 1);
                line.extend_from_slice(bytes);
                line.push(b'\n');
                line
            }
            None => run_line(&self.run),
        }
    }
}

/// One run as a line of a results file, as this version writes it: compact JSON and `\n`.
pub fn run_line(run: &Run) -> Vec<u8> {
    // invariant: a `Run` (strings, numbers, string-keyed structs) always serializes
    let mut line = serde_json::to_vec(run).expect("a run always serializes");
    line.push(b'\n');
    line
}
