//! `RecordedRun`: a run and the place it was read from ([`RunPlace`]: its file, and its line in a
//! JSON Lines file) — the one shape in which every reader of recorded runs (`replay`, `export`,
//! `merge`, `score`, `compare`, `report`, `--fewshot-from`) holds them.

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
}

impl RecordedRun {
    /// The run's question id; `""` for a run without one (`ask --record`'s). Every results line
    /// has one: `merge::read_evaluation` refuses a line without.
    pub fn id(&self) -> &str {
        self.run.id.as_deref().unwrap_or_default()
    }

    /// Its line in a JSON Lines file, from 1; 0 for a single run's file.
    pub fn line(&self) -> usize {
        self.place.line.unwrap_or(0)
    }
}
