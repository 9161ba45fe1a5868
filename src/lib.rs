//! react-docstore: a few-shot ReAct agent that answers multi-hop questions over Wikipedia.
//!
//! The modules are declared in layers, bottom up, the way data flows: the words every layer
//! shares; the [`llm`] and the [`docstore`]; the [`record`] of runs (a run, question and results
//! files, what makes runs one evaluation); the [`agent`] (few-shot examples, prompt, scratchpad,
//! action grammar, environment, the loop); the [`solver`]s that set each method up; the
//! [`trajectories`] rebuilt from runs (export, few-shot from runs); the [`analysis`] of results;
//! the [`eval`] runner; and the apps ([`ask`], [`chat`], [`replay`], [`explore`], [`mcp`],
//! [`serve`]). A module imports only modules declared above it.

// Layers, bottom up: a module imports only modules declared above it, and so does each module
// of a folder among its siblings (tests/it/layers.rs).

// Words every layer shares.
pub mod digest;
pub mod fsutil;
pub mod rng;
mod json;
pub mod method;
pub mod profile;
pub mod task;
mod http;
pub mod secret;
pub mod input;
pub mod output;
pub mod metrics;
pub mod limits;

// The model, and the docstores an action reads.
pub mod llm;
pub mod docstore;

// The record of runs: a run, question files, results files, one evaluation's settings.
pub mod record;

// The agent: a question's prompt, the action the model writes, the loop that runs it.
pub mod agent;

// The methods built on the agent.
pub mod solver;

// Trajectories: runs rebuilt, as training data and as few-shot examples.
pub mod trajectories;

// Analysis of results: the reductions of attempts, summaries, scores, comparisons, the report.
pub mod analysis;

// The evaluation runner.
pub mod eval;

// The apps: one question, a conversation, recordings again; the docstore by hand and served.
pub mod ask;
pub mod chat;
pub mod replay;
pub mod explore;
pub mod mcp;
pub mod serve;

// The command line, above everything: `main.rs` and the Python package's script run it.
pub mod cli;

pub use agent::action::{Action, ActionError, ActionGrammar};
pub use agent::{Agent, Episode, StepEvent};
pub use method::Method;
pub use profile::Profile;
pub use record::run::{Run, RunStep, Stopped, Usage};
