//! `mcp`: the docstore as a Model Context Protocol server on stdio (tools `search`, `lookup`).

use std::process::ExitCode;

use react_docstore::Profile;
use react_docstore::mcp;

use super::options::DocstoreArgs;

#[derive(clap::Args)]
pub struct McpArgs {
    /// `paper` reads pages and words observations as the ReAct repository; `default` fixes its defects.
    #[arg(
        long,
        env = "REACT_PROFILE",
        default_value = "default",
        value_name = "PROFILE"
    )]
    profile: Profile,
    #[command(flatten)]
    docstore: DocstoreArgs,
}

pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    args.docstore.check_not_distractor("mcp")?;
    let source = args.docstore.open(args.profile)?;
    mcp::serve(source.as_ref(), tokio::io::stdin(), tokio::io::stdout()).await?;
    Ok(ExitCode::SUCCESS)
}
