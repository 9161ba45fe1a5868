//! `CommandTool`: a user's tool from the command line (`--tool NAME=COMMAND`) — an external program
//! that reads the action's argument on stdin and answers on stdout.
//!
//! The command runs with `sh -c COMMAND`, so pipes, quotes and `$VARIABLES` work as in a shell. Its
//! argument arrives on stdin followed by a newline; its stdout, trimmed, is the observation. A
//! command that fails, hangs or floods stdout gives an observation saying so: the model reads
//! it and carries on. Only a command that cannot be started at all is an error.

use std::process::Stdio;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::tool::{Tool, ToolError};

/// How long a command may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a command's stdout becomes the observation by default.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 * 1024;
/// How much of stderr is kept, to quote its first line.
const MAX_STDERR_BYTES: usize = 4096;

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
    /// Parses `NAME=COMMAND`, with the default timeout and output cap.
    pub fn parse(definition: &str) -> Result<CommandToolConfig, CommandToolConfigError> {
        let Some((name, command)) = definition.split_once('=') else {
            return Err(CommandToolConfigError::NoEquals {
                definition: definition.to_owned(),
            });
        };
        let (name, command) = (name.trim(), command.trim());
        let mut chars = name.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            return Err(CommandToolConfigError::BadName {
                definition: definition.to_owned(),
                name: name.to_owned(),
            });
        }
        if ["search", "lookup", "finish", "think"].contains(&name.to_ascii_lowercase().as_str()) {
            return Err(CommandToolConfigError::Reserved {
                definition: definition.to_owned(),
                name: name.to_owned(),
            });
        }
        if command.is_empty() {
            return Err(CommandToolConfigError::EmptyCommand {
                definition: definition.to_owned(),
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
    pub fn new(config: CommandToolConfig) -> CommandTool {
        let description = format!(
            "{}[input], which runs the command `{}` on the input and returns its output.",
            config.name, config.command
        );
        CommandTool { config, description }
    }

    /// The observation for `argument`.
    pub async fn run(&self, argument: &str) -> Result<String, SpawnError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.config.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError {
                command: self.config.command.clone(),
                source,
            })?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let input = format!("{argument}\n");
        let max_output_bytes = self.config.max_output_bytes;
        let finished = tokio::time::timeout(self.config.timeout, async {
            // A command that never reads its stdin must not block us: write errors are ignored.
            let write = async {
                let _ = stdin.write_all(input.as_bytes()).await;
                drop(stdin);
            };
            // Past the cap, stop the command rather than wait for it to finish writing.
            let read_stdout = async {
                let stdout = read_capped(stdout, max_output_bytes).await;
                if stdout.len() > max_output_bytes {
                    let _ = child.start_kill();
                }
                stdout
            };
            let ((), stdout, stderr) = tokio::join!(write, read_stdout, read_head(stderr, MAX_STDERR_BYTES));
            let status = child.wait().await;
            (status, stdout, stderr)
        })
        .await;
        let name = &self.config.name;
        let Ok((status, stdout, stderr)) = finished else {
            let _ = child.start_kill();
            return Ok(format!(
                "{name} did not finish within {} seconds.",
                self.config.timeout.as_secs_f64()
            ));
        };
        if stdout.len() > max_output_bytes {
            let kept = String::from_utf8_lossy(&stdout[..max_output_bytes]);
            return Ok(format!(
                "{} [output cut at {max_output_bytes} bytes]",
                kept.trim_end()
            ));
        }
        let status = status.map_err(|source| SpawnError {
            command: self.config.command.clone(),
            source,
        })?;
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr);
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
        let output = String::from_utf8_lossy(&stdout).trim().to_owned();
        if output.is_empty() {
            return Ok(format!("{name} returned no output."));
        }
        Ok(output)
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

/// Reads to the end, keeping the first `max_bytes`: a chatty stderr must not block the command.
async fn read_head(mut reader: impl AsyncRead + Unpin, max_bytes: usize) -> Vec<u8> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(n_read) = reader.read(&mut buffer).await {
        if n_read == 0 {
            break;
        }
        let room = max_bytes.saturating_sub(head.len());
        head.extend_from_slice(&buffer[..n_read.min(room)]);
    }
    head
}

/// Reads at most `max_bytes + 1` bytes: one more than the cap tells that the output was cut.
async fn read_capped(reader: impl AsyncRead + Unpin, max_bytes: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX).saturating_add(1);
    let _ = reader.take(limit).read_to_end(&mut bytes).await;
    bytes
}
