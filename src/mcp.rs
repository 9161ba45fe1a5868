//! `mcp`: the docstore as a Model Context Protocol server (rmcp, the official Rust SDK) — the
//! tools `search` {query} and `lookup` {keyword}, answering with the observations of `explore`
//! over one explorer per connection (its page and Lookup cursor).
//!
//! Over stdio, stdout carries protocol messages only: logs go to stderr.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;

use crate::docstore::{Docstore, DocstoreSource};

/// `search`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// The entity to search, as a Wikipedia title: `Arthur's Magazine`.
    pub query: String,
}

/// `lookup`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct LookupArgs {
    /// The word or phrase to find in the page the last search opened.
    pub keyword: String,
}

/// One connection's tools over one explorer: the page the last search opened and the cursor.
#[derive(Clone)]
pub struct DocstoreTools {
    explorer: Arc<Mutex<Box<dyn Docstore>>>,
    tool_router: ToolRouter<DocstoreTools>,
}

#[tool_router]
impl DocstoreTools {
    /// Tools over a fresh explorer of `source`.
    pub fn new(source: &dyn DocstoreSource) -> DocstoreTools {
        DocstoreTools {
            explorer: Arc::new(Mutex::new(source.open(&[]))),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Search Wikipedia for an entity. An exact title opens its page and gives its first sentences; otherwise the answer lists similar titles to search next (`Could not find X. Similar: [...]`). The page opened is the one `lookup` reads."
    )]
    async fn search(
        &self,
        Parameters(SearchArgs { query }): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut explorer = self.explorer.lock().await;
        Ok(match explorer.search(&query).await {
            Ok(observation) => CallToolResult::success(vec![ContentBlock::text(observation)]),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the search failed: {:#}",
                anyhow::Error::new(error)
            ))]),
        })
    }

    #[tool(
        description = "The next sentence containing the keyword in the page the last search opened, as `(Result i / n) sentence`; the same keyword again walks forward, a new search starts afresh."
    )]
    async fn lookup(
        &self,
        Parameters(LookupArgs { keyword }): Parameters<LookupArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut explorer = self.explorer.lock().await;
        Ok(CallToolResult::success(vec![ContentBlock::text(
            explorer.lookup(&keyword),
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DocstoreTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("react-docstore", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Wikipedia as a ReAct agent reads it: `search` an entity to open its page (or get similar titles), then `lookup` a keyword to walk through the sentences of that page that contain it.",
            )
    }
}

/// Serves the tools over `source` on one connection (`reader`, `writer`: stdin and stdout)
/// until the client closes it.
pub async fn serve<R, W>(source: &dyn DocstoreSource, reader: R, writer: W) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = DocstoreTools::new(source)
        .serve((reader, writer))
        .await
        .map_err(|error| McpError(error.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|error| McpError(error.to_string()))?;
    Ok(())
}

/// The connection could not be set up or ended in failure.
#[derive(Debug, thiserror::Error)]
#[error("MCP connection: {0}")]
pub struct McpError(String);
