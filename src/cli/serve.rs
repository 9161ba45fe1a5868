//! `serve`: the docstore over HTTP (the ReAct environment, DSPy's and Search-R1's retrieval).

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::apps::serve::{self, PoolSize, ServeLimits, Served, ServedDocstore, Shutdown, StateKey};
use crate::base::output;

use super::options::{DocstoreArgs, ProfileArg, SERVED_DOCSTORES, SERVED_OFFLINE};
use super::signals::stop_signals;

/// Where replicas find the key they share, besides `--state-key-file`.
const STATE_KEY_ENV: &str = "REACT_STATE_KEY";
/// The largest key file read, in bytes (a key is tens of bytes).
const KEY_FILE_BYTES: u64 = 4096;

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
    /// The address to listen on, HOST:PORT: `127.0.0.1:8080`, `localhost:8080`, `[::1]:8080`,
    /// `0.0.0.0:8080` (port 0: any free port, named in the startup line).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT", value_parser = check_listen, help_heading = "Server")]
    listen: String,
    /// A file holding the secret step states are signed with (at least 32 bytes; a final newline
    /// is not part of it); replicas behind one load balancer share it. Or set REACT_STATE_KEY.
    /// Without either, a random key: states from this process only.
    #[arg(long, value_name = "FILE", help_heading = "Server")]
    state_key_file: Option<PathBuf>,
    /// Refused: a key on the command line is shown to every user of the machine.
    #[arg(long, hide = true, value_name = "SECRET", help_heading = "Server")]
    state_key: Option<String>,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, default_value_t = ServeLimits::default().max_connections, value_name = "N", help_heading = "Server")]
    max_connections: usize,
    /// After SIGTERM or Ctrl-C, how long the requests in flight may take to finish, in seconds;
    /// any still running then are abandoned (exit 1).
    #[arg(long, default_value_t = ServeLimits::default().drain_timeout.as_secs(), value_name = "SECONDS", help_heading = "Server")]
    drain_timeout: u64,
}

/// `--listen`'s value when it is `HOST:PORT` (an IPv6 address in brackets).
fn check_listen(listen: &str) -> Result<String, String> {
    let valid = listen.parse::<std::net::SocketAddr>().is_ok()
        || listen.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && !host.contains([':', '[', ']', '/']) && port.parse::<u16>().is_ok()
        });
    if valid {
        Ok(listen.to_owned())
    } else {
        Err("expected HOST:PORT: `127.0.0.1:8080`, `localhost:8080`, `[::1]:8080`".to_owned())
    }
}

/// The key states are signed with: the file's, the environment's, or a random one.
fn state_key(args: &ServeArgs) -> anyhow::Result<(StateKey, KeySource)> {
    if args.state_key.is_some() {
        anyhow::bail!(
            "`--state-key` is not taken on the command line, where every user of the machine can read it: put the key in a file (`--state-key-file FILE`) or in {STATE_KEY_ENV}"
        );
    }
    if let Some(path) = &args.state_key_file {
        let secret = read_key_file(path)?;
        let key = StateKey::new(&secret).with_context(|| format!("`{}`", path.display()))?;
        return Ok((key, KeySource::Shared));
    }
    if let Some(secret) = std::env::var_os(STATE_KEY_ENV) {
        let key = StateKey::new(secret.as_encoded_bytes()).with_context(|| STATE_KEY_ENV.to_owned())?;
        return Ok((key, KeySource::Shared));
    }
    let key = StateKey::random().context("cannot make a random state key")?;
    Ok((key, KeySource::Random))
}

/// A key file's bytes, without a final line break.
fn read_key_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the state key file `{}`", path.display()))?;
    let mut secret = Vec::new();
    file.take(KEY_FILE_BYTES + 1)
        .read_to_end(&mut secret)
        .with_context(|| format!("cannot read the state key file `{}`", path.display()))?;
    if secret.len() as u64 > KEY_FILE_BYTES {
        anyhow::bail!(
            "the state key file `{}` is larger than {KEY_FILE_BYTES} bytes: is it the key?",
            path.display()
        );
    }
    while secret.last().is_some_and(|byte| matches!(byte, b'\n' | b'\r')) {
        secret.pop();
    }
    Ok(secret)
}

/// Whether states outlive this process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeySource {
    Shared,
    Random,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let stop = stop_signals()?;
    let (key, key_source) = state_key(&args)?;
    let config = args.docstore.config(args.profile.profile);
    let docstore = ServedDocstore::open(&config, PoolSize::for_this_machine())?;
    let listener = tokio::net::TcpListener::bind(args.listen.as_str())
        .await
        .with_context(|| format!("cannot listen on `{}`", args.listen))?;
    let address = listener
        .local_addr()
        .context("the listening socket has no address")?;
    let limits = ServeLimits {
        max_connections: args.max_connections,
        drain_timeout: Duration::from_secs(args.drain_timeout),
        ..ServeLimits::default()
    };
    let _ = writeln!(
        output::stderr(),
        "serving {}, {} profile, on http://{address}: POST /v1/step, GET|POST /api/search, POST /retrieve, GET /health{}",
        docstore.info(),
        args.profile.profile,
        match key_source {
            KeySource::Shared => "",
            KeySource::Random =>
                " (states signed with a key of this process: give one in --state-key-file or REACT_STATE_KEY to share them across replicas)",
        },
    );
    let served = Arc::new(Served {
        docstore: Arc::new(docstore),
        key,
    });
    let stopped = serve::serve(listener, serve::router(served, &limits), &limits, stop).await?;
    Ok(match stopped {
        Shutdown::Drained => {
            let _ = writeln!(output::stderr(), "stopped: every request in flight was answered");
            ExitCode::SUCCESS
        }
        Shutdown::Abandoned { requests } => {
            let _ = writeln!(
                output::stderr(),
                "stopped: {requests} request{} still in flight after the {} s drain timeout {} abandoned unanswered",
                if requests == 1 { "" } else { "s" },
                args.drain_timeout,
                if requests == 1 { "was" } else { "were" },
            );
            ExitCode::from(1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_host_names_and_addresses_with_a_port() {
        for good in [
            "127.0.0.1:8080",
            "localhost:8081",
            "[::1]:0",
            "0.0.0.0:80",
            "my-host.lab:9000",
        ] {
            assert_eq!(check_listen(good).as_deref(), Ok(good));
        }
        for bad in [
            "localhost",
            "localhost:",
            ":8080",
            "::1:8080",
            "localhost:99999",
            "host:http",
        ] {
            assert!(check_listen(bad).is_err(), "{bad}");
        }
    }
}
