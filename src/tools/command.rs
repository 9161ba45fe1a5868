//! `CommandTool`: a user's tool from the command line (`--tool NAME=COMMAND`) — an external program
//! that reads the action's argument on stdin and answers on stdout.
//!
//! The command runs with `sh -c COMMAND`, so pipes, quotes and `$VARIABLES` work as in a shell. Its
//! argument arrives on stdin followed by a newline; its stdout, trimmed, is the observation. A
//! command that fails, hangs or floods stdout gives an observation saying so: the model reads
//! it and carries on. Only a command that cannot be started at all is an error. What the tool
//! shows of its command (the prompt line the model reads and runs record, its errors) has the
//! credentials it recognises taken out; a secret belongs in the command's environment (`$TOKEN`).

use std::process::Stdio;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::base::secret::redact_command;
use crate::tools::function_key;
use crate::tools::{Tool, ToolError};

/// How long a command may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a command's stdout becomes the observation by default.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 * 1024;
/// How much of stderr is kept, to quote its first line.
const MAX_STDERR_BYTES: usize = 4096;
/// How long, after the command exits, its output may still take to arrive: what it left running
/// in the background may hold the pipes open, and is not waited for.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// A `NAME=COMMAND` tool definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandToolConfig {
    /// The bracket name, e.g. `Weather` for `Weather[Paris]`.
    pub name: String,
    /// A shell command line, run with `sh -c`.
    pub command: String,
    pub timeout: Duration,
    pub max_output_bytes: usize,
}

/// Why a `NAME=COMMAND` definition is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandToolConfigError {
    #[error(
        "`--tool {definition}`: expected `NAME=COMMAND`, e.g. `--tool 'Weather=curl -s wttr.in/$(cat)?format=3'`"
    )]
    NoEquals { definition: String },
    #[error(
        "`--tool {definition}`: the name `{name}` must start with a letter and hold only letters, digits and `_`"
    )]
    BadName { definition: String, name: String },
    #[error("`--tool {definition}`: `{name}` is a built-in action")]
    Reserved { definition: String, name: String },
    #[error("`--tool {definition}`: the command is empty")]
    EmptyCommand { definition: String },
}

impl CommandToolConfig {
    /// Parses `NAME=COMMAND`, with the default timeout and output cap. An error quotes the
    /// definition with the credentials it recognises taken out ([`redact_command`]).
    pub fn parse(definition: &str) -> Result<CommandToolConfig, CommandToolConfigError> {
        let shown = redact_command(definition);
        let Some((name, command)) = definition.split_once('=') else {
            return Err(CommandToolConfigError::NoEquals {
                definition: shown.clone(),
            });
        };
        let (name, command) = (name.trim(), command.trim());
        let mut chars = name.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            return Err(CommandToolConfigError::BadName {
                definition: shown.clone(),
                name: name.to_owned(),
            });
        }
        // `Look_Up` too: with `--api tools` it would be one function with `lookup`.
        if ["search", "lookup", "finish", "think"].contains(&function_key(name).as_str()) {
            return Err(CommandToolConfigError::Reserved {
                definition: shown.clone(),
                name: name.to_owned(),
            });
        }
        if command.is_empty() {
            return Err(CommandToolConfigError::EmptyCommand {
                definition: shown.clone(),
            });
        }
        Ok(CommandToolConfig {
            name: name.to_owned(),
            command: command.to_owned(),
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        })
    }
}

/// Runs `sh -c COMMAND` for each call.
#[derive(Debug, Clone)]
pub struct CommandTool {
    config: CommandToolConfig,
    description: String,
}

/// A command that could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start `sh -c {command}`")]
pub struct SpawnError {
    command: String,
    #[source]
    source: std::io::Error,
}

impl CommandTool {
    /// The tool for `config`. Its prompt line quotes the command with the credentials it
    /// recognises taken out ([`redact_command`]): the line goes to the model and into every run
    /// file, and a command without any reads as written.
    pub fn new(config: CommandToolConfig) -> CommandTool {
        let description = format!(
            "{}[input], which runs the command `{}` on the input and returns its output.",
            config.name,
            redact_command(&config.command)
        );
        CommandTool { config, description }
    }

    /// The observation for `argument`.
    pub async fn run(&self, argument: &str) -> Result<String, SpawnError> {
        let spawn_error = |source| SpawnError {
            command: redact_command(&self.config.command),
            source,
        };
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.config.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that everything the command starts can be stopped with it.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(spawn_error)?;
        // Killed when this call ends, however it ends (a timeout, a cancelled question).
        let group = ProcessGroup::of(&child);
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(std::io::Error::other(
                "its standard streams are not piped",
            )));
        };
        let input = format!("{argument}\n");
        let max_output_bytes = self.config.max_output_bytes;
        let (mut stdout_bytes, mut stderr_bytes) = (Vec::new(), Vec::new());
        let status = {
            // A command that never reads its stdin must not block us: write errors are ignored.
            let write = async {
                let _ = stdin.write_all(input.as_bytes()).await;
                drop(stdin);
            };
            // Past the cap, stop the command rather than wait for it to finish writing.
            let read_stdout = async {
                read_capped(stdout, max_output_bytes, &mut stdout_bytes).await;
                if stdout_bytes.len() > max_output_bytes {
                    group.kill();
                }
            };
            let read_stderr = read_head(stderr, MAX_STDERR_BYTES, &mut stderr_bytes);
            let mut streams = std::pin::pin!(async {
                tokio::join!(write, read_stdout, read_stderr);
            });
            tokio::time::timeout(self.config.timeout, async {
                tokio::select! {
                    status = child.wait() => {
                        // What the command left running in the background may hold its pipes open:
                        // take what is already written, then stop waiting for more.
                        if tokio::time::timeout(EXIT_GRACE, &mut streams).await.is_err() {
                            group.kill();
                            let _ = tokio::time::timeout(EXIT_GRACE, &mut streams).await;
                        }
                        status
                    }
                    () = &mut streams => child.wait().await,
                }
            })
            .await
        };
        drop(group);
        let name = &self.config.name;
        let Ok(status) = status else {
            return Ok(format!(
                "{name} did not finish within {} seconds.",
                self.config.timeout.as_secs_f64()
            ));
        };
        if stdout_bytes.len() > max_output_bytes {
            let kept = String::from_utf8_lossy(stdout_bytes.get(..max_output_bytes).unwrap_or_default());
            return Ok(format!(
                "{} [output cut at {max_output_bytes} bytes]",
                kept.trim_end()
            ));
        }
        let status = status.map_err(spawn_error)?;
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr_bytes);
            let first_line = stderr
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or("no message on stderr");
            let exit = match status.code() {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".to_owned(),
            };
            return Ok(format!("{name} failed ({exit}): {first_line}"));
        }
        let output = String::from_utf8_lossy(&stdout_bytes).trim().to_owned();
        if output.is_empty() {
            return Ok(format!("{name} returned no output."));
        }
        Ok(output)
    }
}

/// The process group a command runs in; `SIGKILL`ed when dropped, so nothing the command started
/// (`sleep 100 &`, a pipeline's other processes) outlives the call.
struct ProcessGroup {
    id: Option<i32>,
}

impl ProcessGroup {
    /// The group `child` leads (it was spawned with `process_group(0)`).
    fn of(child: &tokio::process::Child) -> ProcessGroup {
        ProcessGroup {
            id: child.id().and_then(|pid| i32::try_from(pid).ok()),
        }
    }

    fn kill(&self) {
        #[cfg(unix)]
        if let Some(id) = self.id {
            // SAFETY: `kill` takes plain integers and touches no memory; a negative pid signals the
            // group the command leads, and nothing else (a group that is gone gives `ESRCH`).
            unsafe {
                libc::kill(-id, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Tool for CommandTool {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn call<'a>(&'a self, argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.run(argument).await.map_err(|error| ToolError {
                tool: self.config.name.clone(),
                source: Box::new(error),
            })
        })
    }
}

/// Reads to the end, keeping the first `max_bytes` in `head`: a chatty stderr must not block the
/// command.
async fn read_head(mut reader: impl AsyncRead + Unpin, max_bytes: usize, head: &mut Vec<u8>) {
    let mut buffer = [0u8; 8192];
    while let Ok(n_read) = reader.read(&mut buffer).await {
        if n_read == 0 {
            break;
        }
        let room = max_bytes.saturating_sub(head.len());
        head.extend_from_slice(buffer.get(..n_read.min(room)).unwrap_or_default());
    }
}

/// Reads at most `max_bytes + 1` bytes into `bytes`: one more than the cap tells that the output
/// was cut. What was read stays in `bytes` if the read is abandoned halfway.
async fn read_capped(mut reader: impl AsyncRead + Unpin, max_bytes: usize, bytes: &mut Vec<u8>) {
    let limit = max_bytes.saturating_add(1);
    let mut buffer = [0u8; 8192];
    while bytes.len() < limit {
        let room = (limit - bytes.len()).min(buffer.len());
        match reader.read(&mut buffer[..room]).await {
            Ok(0) | Err(_) => break,
            Ok(n_read) => bytes.extend_from_slice(buffer.get(..n_read).unwrap_or_default()),
        }
    }
}
