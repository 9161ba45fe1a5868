//! The agent: a question's prompt ([`fewshot`] examples, the [`prompt`] header, the growing
//! [`scratchpad`]), the [`action`] grammar the model's reply is read with, the [`tool`]s and
//! function [`calls`] beside it, the [`environment`] that turns an action into an observation,
//! the loop that repeats until `Finish` ([`episode`]), and its live [`trace`].

pub mod fewshot;
pub mod scratchpad;
pub mod action;
pub mod tool;
pub mod calls;
pub mod prompt;
pub mod environment;
pub mod tools;
pub mod episode;
pub mod trace;

pub(crate) use episode::error_chain;
pub use episode::{Agent, DEFAULT_MAX_STEPS, Episode, Repeats, StepEvent};
