//! `mcp`: the docstore as a Model Context Protocol server (rmcp, the official Rust SDK) — the
//! tools `search` {query} and `lookup` {keyword}, answering with the observations of `explore`
//! over one explorer per connection (its page and Lookup cursor).
//!
//! Over stdio, stdout carries protocol messages only: logs go to stderr. A message is at most
//! [`MAX_MESSAGE_BYTES`] (a longer line is dropped with an error), a query or keyword at most
//! [`MAX_ARGUMENT_BYTES`] (a longer one is refused as invalid arguments).

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;

use crate::docstore::{Docstore, DocstoreSource};

/// The longest query or keyword, in bytes: the one limit on an action's argument, which `serve`
/// and the agent hold too.
pub use crate::base::limits::MAX_ARGUMENT_BYTES;
/// The longest protocol message (one line on stdin), in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// `argument` when it is at most [`MAX_ARGUMENT_BYTES`], or the error that refuses it.
fn within_limit<'a>(field: &str, argument: &'a str) -> Result<&'a str, ErrorData> {
    if argument.len() > MAX_ARGUMENT_BYTES {
        return Err(ErrorData::invalid_params(
            format!(
                "`{field}` is {} bytes, more than the {MAX_ARGUMENT_BYTES} it can be",
                argument.len()
            ),
            None,
        ));
    }
    Ok(argument)
}

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
        let query = within_limit("query", &query)?;
        let mut explorer = self.explorer.lock().await;
        Ok(match explorer.search(query).await {
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
        let keyword = within_limit("keyword", &keyword)?;
        let mut explorer = self.explorer.lock().await;
        Ok(CallToolResult::success(vec![ContentBlock::text(
            explorer.lookup(keyword),
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
    let transport =
        AsyncRwTransport::<RoleServer, _, _>::new(reader, writer).with_max_line_length(MAX_MESSAGE_BYTES);
    let running = DocstoreTools::new(source)
        .serve(transport)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::profile::Profile;
    use crate::docstore::{DocstoreConfig, DocstoreKind};

    #[tokio::test]
    async fn a_query_or_keyword_over_the_limit_is_refused_before_it_is_searched() {
        let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/index/pages.jsonl");
        let config = DocstoreConfig {
            kind: DocstoreKind::Corpus(pages),
            ..DocstoreConfig::new(Profile::Default)
        };
        let source = config.open().unwrap();
        let tools = DocstoreTools::new(source.as_ref());
        let long = "Special Air Service ".repeat(300);
        let refused = tools
            .search(Parameters(SearchArgs { query: long.clone() }))
            .await
            .unwrap_err();
        assert_eq!(
            refused.message,
            "`query` is 6000 bytes, more than the 4096 it can be"
        );
        let refused = tools
            .lookup(Parameters(LookupArgs { keyword: long }))
            .await
            .unwrap_err();
        assert_eq!(
            refused.message,
            "`keyword` is 6000 bytes, more than the 4096 it can be"
        );
        // Within the limit, as before.
        let found = tools
            .search(Parameters(SearchArgs {
                query: "Special Air Service".to_owned(),
            }))
            .await
            .unwrap();
        assert_eq!(found.is_error, Some(false));
    }
}
