//! One module per command: its arguments (clap) and the code that runs it; `options` holds the
//! option groups several commands share.

pub mod options;
pub mod progress;
pub mod signals;

pub mod ask;
pub mod cache;
pub mod chat;
pub mod compare;
pub mod eval;
pub mod explore;
pub mod export;
pub mod index;
pub mod mcp;
pub mod merge;
pub mod replay;
pub mod report;
pub mod score;
pub mod serve;
