//! The words every layer shares: digests, atomic files, the seeded random stream, JSON helpers,
//! the method and profile names, the task, HTTP with its retry rules, secrets, input and output
//! streams, the official metric, the stated limits, and how text is cut for display.

pub mod text;
pub mod digest;
pub mod fsutil;
pub mod rng;
pub(crate) mod json;
pub mod method;
pub mod profile;
pub mod task;
pub mod secret;
pub(crate) mod http;
pub mod input;
pub mod output;
pub mod metrics;
pub mod limits;
