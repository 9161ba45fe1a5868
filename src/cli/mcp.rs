//! `mcp`: the docstore as a Model Context Protocol server on stdio (tools `search`, `lookup`).

use std::process::ExitCode;

use crate::apps::mcp;
use crate::docstore::Opener;

use super::options::{DocstoreArgs, ProfileArg, SERVED_DOCSTORES, SERVED_OFFLINE};

#[derive(clap::Args)]
#[command(
    mut_arg("docstore", |arg| arg.help(SERVED_DOCSTORES)),
    mut_arg("offline", |arg| arg.help(SERVED_OFFLINE))
)]
pub struct McpArgs {
    #[command(flatten)]
    profile: ProfileArg,
    #[command(flatten)]
    docstore: DocstoreArgs,
}

pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let source = args.docstore.open(args.profile.profile, Opener::Command("mcp"))?;
    mcp::serve(source.as_ref(), tokio::io::stdin(), tokio::io::stdout()).await?;
    Ok(ExitCode::SUCCESS)
}
