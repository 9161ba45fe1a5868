//! `explore`: Search[...] / Lookup[...] (and tool actions) by hand against a docstore.

use std::process::ExitCode;

use crate::apps::explore::{self, Explore, ExploreFormat};
use crate::base::output;
use crate::docstore::Opener;

use super::options::{
    DocstoreArgs, EXPLORED_DOCSTORES, EXPLORED_OFFLINE, ProfileArg, ToolArgs, stdin_interaction,
};

/// Who opens the docstore, as its refusals name it.
const EXPLORE: Opener = Opener::Command("explore");

#[derive(clap::Args)]
#[command(
    mut_arg("docstore", |arg| arg.help(EXPLORED_DOCSTORES)),
    mut_arg("offline", |arg| arg.help(EXPLORED_OFFLINE))
)]
pub struct ExploreArgs {
    /// Actions such as `Search[Colorado orogeny]` `Lookup[New Mexico]`; none: an interactive prompt.
    actions: Vec<String>,
    #[command(flatten)]
    profile: ProfileArg,
    #[command(flatten)]
    docstore: DocstoreArgs,
    #[command(flatten)]
    tools: ToolArgs,
    /// Print one `{"action", "observation"}` JSON line per action.
    #[arg(long, help_heading = "Output")]
    json: bool,
}

pub async fn run(args: ExploreArgs) -> anyhow::Result<ExitCode> {
    args.tools.check_profile(args.profile.profile)?;
    let source = args.docstore.open(args.profile.profile, EXPLORE)?;
    let mut session = Explore::new(
        source.as_ref(),
        args.tools.open(&args.docstore.fetch)?,
        args.profile.profile,
    );
    let format = if args.json {
        ExploreFormat::Json
    } else {
        ExploreFormat::Text
    };
    let mut stdout = output::stdout();
    if args.actions.is_empty() {
        // Between actions the session waits for the next line; nothing else runs meanwhile.
        let mut stdin = std::io::stdin().lock();
        let mut stderr = output::stderr();
        explore::run_interactive(
            &mut session,
            &mut stdin,
            format,
            &mut stdout,
            &mut stderr,
            stdin_interaction(),
        )
        .await?;
    } else {
        explore::run_actions(&mut session, &args.actions, format, &mut stdout).await?;
    }
    Ok(ExitCode::SUCCESS)
}
