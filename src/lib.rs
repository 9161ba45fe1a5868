//! react-docstore: a few-shot ReAct agent that answers multi-hop questions over Wikipedia.
//!
//! The modules are declared in layers, bottom up, the way data flows: the words every layer
//! shares ([`base`]); the [`llm`] and the [`docstore`]; the [`record`] of runs (a run, question and results
//! files, what makes runs one evaluation); the [`agent`] (few-shot examples, prompt, scratchpad,
//! action grammar, environment, the loop) with its extra [`tools`]; the [`solver`]s that set each method up; the
//! [`trajectories`] rebuilt from runs (export, few-shot from runs); the [`analysis`] of results;
//! the [`eval`] runner; and the [`apps`] (`ask`, `chat`, `replay`, `explore`, `mcp`, `serve`) under
//! the command line ([`cli`]). A module imports only modules declared above it.

// Layers, bottom up: a module imports only modules declared above it, and so does each module
// of a folder among its siblings (tests/it/layers.rs).

pub mod base;

pub mod llm;
pub mod docstore;

pub mod record;

pub mod tools;
pub mod agent;

pub mod solver;

pub mod trajectories;

pub mod analysis;

pub mod eval;

pub mod apps;

pub mod cli;
