//! The apps the command line runs, each a library entry point too: [`ask`] one question,
//! [`chat`] a conversation, [`replay`] a recorded run, [`explore`] a docstore by hand, and the
//! docstore served to other programs over MCP ([`mcp`]) and HTTP ([`serve`]).

pub mod ask;
pub mod chat;
pub mod replay;
pub mod explore;
pub mod mcp;
pub mod serve;
