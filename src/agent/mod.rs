//! The agent: a question's prompt ([`fewshot`] examples, the [`prompt`] header, the growing
//! [`scratchpad`]), the [`action`] grammar the model's reply is read with, the function [`calls`]
//! that carry actions and [`crate::tools`], the [`environment`] that turns an action into an observation,
//! the loop that repeats until `Finish` ([`episode`]), and its live [`trace`].

pub mod fewshot;
pub mod scratchpad;
pub mod action;
pub mod calls;
pub mod prompt;
pub mod environment;
mod episode;
pub mod trace;

pub(crate) use episode::error_chain;
pub use episode::{Agent, DEFAULT_MAX_STEPS, Episode, Repeats, StepEvent};
