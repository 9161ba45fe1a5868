//! The record: what a run leaves behind and everything that reads it back — a question's [`run`]
//! (with [`run::settings`], what makes runs one evaluation), the question files ([`questions`]) and
//! which of their questions an evaluation runs ([`selection`], [`shard`]), the results file `eval`
//! appends to ([`results`]), the one rule that turns path arguments into recorded files
//! ([`files`], which also reads a file's runs), a run and the place it was read from ([`recorded`]), and several results files read as one evaluation ([`merge`]).
//!
//! It sits below every layer that writes or reads runs, so the agent, the trajectories, the
//! analysis and the apps all agree on what a run is and where it was read.

pub mod run;
pub mod recorded;
pub mod questions;
pub mod shard;
pub mod selection;
pub mod results;
pub mod files;
pub mod evaluation;
pub mod merge;
