//! react-docstore: a few-shot ReAct agent that answers multi-hop questions over Wikipedia.
//!
//! The modules are declared in layers, bottom up, the way data flows: the few-shot [`fewshot`]
//! examples and the [`prompt`] header start a question's [`scratchpad`]; the [`llm`] writes a
//! thought and an [`action`]; the [`environment`] runs it against the [`docstore`] or a [`tool`];
//! the [`agent`] loop repeats until `Finish` and records a [`run`] (which also holds what makes
//! runs one evaluation, [`run::settings`]); [`solver`] sets each method up; [`export`] and
//! [`fewshot_from`] turn runs into trajectories; [`ask`], [`chat`], [`eval`] and [`replay`] are the
//! apps; [`compare`] and [`report`] read results; [`explore`], [`mcp`] and [`serve`] hand the
//! docstore to people and other agents. A module imports only modules declared above it.

// Layers, bottom up: a module imports only modules declared above it (tests/it/layers.rs).

// Words every layer shares.
pub mod digest;
pub mod fsutil;
mod json;
pub mod method;
pub mod profile;
pub mod task;
mod http;
pub mod secret;

// A question's prompt, the model, and the action it writes.
pub mod fewshot;
pub mod scratchpad;
pub mod llm;
pub mod action;
pub mod tool;
pub mod calls;
pub mod prompt;

// What an action reads: the docstores, and the lines of input and output around them.
pub mod input;
pub mod output;
pub mod docstore;
pub mod environment;

// The record of a run, and the scores it carries.
pub mod metrics;
pub mod run;

// The agent loop and the methods built on it.
pub mod tools;
pub mod agent;
pub mod solver;
pub mod trace;

// Trajectories: runs rebuilt as training data and as few-shot examples.
pub mod export;
pub mod fewshot_from;

// The apps: one question, a conversation, a whole question file, recordings again.
pub mod ask;
pub mod chat;
pub mod eval;
pub mod replay;

// Analysis of results files.
pub mod compare;
pub mod report;

// The docstore served to other agents, and by hand.
pub mod explore;
pub mod mcp;
pub mod serve;

pub use action::{Action, ActionError, ActionGrammar};
pub use agent::{Agent, Episode, StepEvent};
pub use method::Method;
pub use profile::Profile;
pub use run::{Run, RunStep, Stopped, Usage};
