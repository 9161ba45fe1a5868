//! `serve`: the docstore over HTTP (the ReAct environment, DSPy's and Search-R1's retrieval).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use react_docstore::output;
use react_docstore::serve::{self, ServeLimits, Served, ServedDocstore, StateKey};

use super::options::{DocstoreArgs, ProfileArg, SERVED_DOCSTORES, SERVED_OFFLINE};
use super::signals::stop_signals;

/// What `--docstore` names for a server: a server has no question's paragraphs (`distractor`).

#[derive(clap::Args)]
#[command(
    mut_arg("docstore", |arg| arg.help(SERVED_DOCSTORES)),
    mut_arg("offline", |arg| arg.help(SERVED_OFFLINE))
)]
pub struct ServeArgs {
    #[command(flatten)]
    profile: ProfileArg,
    #[command(flatten)]
    docstore: DocstoreArgs,
    /// The address to listen on (port 0: any free port, named in the startup line).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    listen: SocketAddr,
    /// The secret step states are signed with (at least 16 bytes); replicas behind one load
    /// balancer share it. Without it, a random key: states from this process only.
    #[arg(long, env = "REACT_STATE_KEY", hide_env_values = true, value_name = "SECRET")]
    state_key: Option<String>,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, default_value_t = ServeLimits::default().max_connections, value_name = "N")]
    max_connections: usize,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let stop = stop_signals()?;
    let config = args.docstore.config(args.profile.profile);
    let docstore = ServedDocstore::open(&config)?;
    let key = match &args.state_key {
        Some(secret) => StateKey::new(secret.as_bytes()).map_err(anyhow::Error::msg)?,
        None => StateKey::random().context("cannot make a random state key")?,
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener
        .local_addr()
        .context("the listening socket has no address")?;
    let limits = ServeLimits {
        max_connections: args.max_connections,
        ..ServeLimits::default()
    };
    let _ = writeln!(
        output::stderr(),
        "serving {}, {} profile, on http://{address}: POST /v1/step, GET|POST /api/search, POST /retrieve, GET /health{}",
        docstore.info(),
        args.profile.profile,
        if args.state_key.is_some() {
            ""
        } else {
            " (states signed with a key of this process: set REACT_STATE_KEY to share them across replicas)"
        },
    );
    let served = Arc::new(Served {
        docstore: Arc::new(docstore),
        key,
    });
    serve::serve(listener, serve::router(served, &limits), &limits, stop).await?;
    let _ = writeln!(output::stderr(), "stopped: every request in flight was answered");
    Ok(ExitCode::SUCCESS)
}
