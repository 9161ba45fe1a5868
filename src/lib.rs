//! react-docstore: a few-shot ReAct agent that answers multi-hop questions over Wikipedia.
//!
//! The modules follow the data: the few-shot [`fewshot`] examples and the [`prompt`] header start
//! a question's [`scratchpad`]; the [`llm`] writes a thought and an [`action`]; the
//! [`environment`] runs it against the [`docstore`] or a [`tool`]; the [`agent`] loop repeats until
//! `Finish` and records a [`run`]; [`ask`] and [`chat`] drive it from the command line, [`replay`]
//! re-runs recordings, [`metrics`] scores answers and [`eval`] runs whole question files.

pub mod fsutil;
mod json;
pub mod method;
pub mod profile;
pub mod secret;
pub mod task;

mod http;

pub mod calls;
pub mod fewshot;
pub mod prompt;
pub mod scratchpad;

pub mod llm;

pub mod action;

pub mod docstore;
pub mod environment;
pub mod tool;
pub mod tools;

pub mod input;

pub mod agent;
pub mod solver;

pub mod ask;
pub mod chat;
pub mod output;
pub mod trace;

pub mod run;

pub mod replay;

pub mod explore;
pub mod mcp;
pub mod serve;

pub mod metrics;

pub mod export;
pub mod fewshot_from;

pub mod eval;

pub mod compare;
pub mod report;

pub use action::{Action, ActionError, ActionGrammar};
pub use agent::{Agent, Episode, StepEvent};
pub use method::Method;
pub use profile::Profile;
pub use run::{Run, RunStep, Stopped, Usage};
