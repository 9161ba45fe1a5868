//! The bounds on what the tool reads from outside: every count or length that a file, a request or
//! a model's reply may hold and that decides how much the tool allocates or asks is checked
//! against one of these before anything is done with it. docs/run-file.md lists them for users.
//!
//! A run file's counts are checked as it is parsed (the functions below, on the fields of `Run`
//! and `EvalSettings`), so every reader of runs (`replay`, `export`, `score`, `merge`, `report`,
//! `compare`, `eval`'s resume, the Python module) refuses an out-of-bounds line with the parser's
//! message, which names the file and the line, before the count sizes anything.

use serde::{Deserialize, Deserializer};

/// The longest argument of an action, in bytes: a `Search` entity, a `Lookup` keyword, a tool's
/// argument, whoever writes it (the agent's model, `explore`, the Python `Explorer`, `serve`'s
/// `/v1/step`, `/retrieve` and `/api/search` queries, `mcp`'s tools). A title is at most 255 bytes
/// and a useful keyword far shorter; the agent answers a longer one with an observation saying so.
pub const MAX_ARGUMENT_BYTES: usize = 4 * 1024;

/// CoT-SC's most samples per question (`--samples`, a run's `vote.samples` and `sc_stop.samples`):
/// what one question may ask of a model, and what a replay or an export sets up again. The paper
/// uses 21; OpenAI's `n` stops at 128.
pub const MAX_SAMPLES: usize = 1024;

/// The largest step budget (`--max-steps`, a run's `max_steps`): the paper's is 7.
pub const MAX_STEPS: usize = 1024;

/// The most attempts at a question: Reflexion's trials and independent epochs (`--trials`,
/// `--epochs`, a run's `trial` and `epoch`, an evaluation's attempt count).
pub const MAX_ATTEMPTS: u32 = 1024;

/// A file's CoT-SC sample count (`vote.samples`, `sc_stop.samples`, …), refused above [`MAX_SAMPLES`].
pub fn samples<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let value = usize::deserialize(deserializer)?;
    within(value as u64, MAX_SAMPLES as u64, "samples")?;
    Ok(value)
}

/// A file's step budget (`max_steps`), when it records one, refused above [`MAX_STEPS`].
pub fn steps<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    let value = Option::<usize>::deserialize(deserializer)?;
    if let Some(value) = value {
        within(value as u64, MAX_STEPS as u64, "steps")?;
    }
    Ok(value)
}

/// A file's attempt number or count (`trial`, `epoch`, an evaluation's attempts), refused above
/// [`MAX_ATTEMPTS`].
pub fn attempts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = u32::deserialize(deserializer)?;
    within(u64::from(value), u64::from(MAX_ATTEMPTS), "attempts")?;
    Ok(value)
}

/// [`attempts`], when the file may leave it out.
pub fn attempt<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    let value = Option::<u32>::deserialize(deserializer)?;
    if let Some(value) = value {
        within(u64::from(value), u64::from(MAX_ATTEMPTS), "attempts")?;
    }
    Ok(value)
}

/// Refuses `value` above `max`, naming what it counts and the limit.
fn within<E: serde::de::Error>(value: u64, max: u64, what: &str) -> Result<(), E> {
    if value > max {
        return Err(E::invalid_value(
            serde::de::Unexpected::Unsigned(value),
            &format!("at most {max} {what} (react-docstore's limit, docs/run-file.md)").as_str(),
        ));
    }
    Ok(())
}
