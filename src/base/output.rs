//! `output`: the commands' stdout and stderr — writing to a closed pipe (`react-docstore ... | head`)
//! ends the process quietly, the way SIGPIPE ends a C program, instead of panicking or reporting it.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe`, and `println!` /
//! `eprintln!` panic on it (exit 101). What a command prints goes through [`stdout`] or [`stderr`]
//! instead (`tests/it/audit.rs` fails on a printing macro in `src/`). SIGPIPE stays ignored for the rest of the process: a `--tool` command that closes
//! its stdin early, or a server that hangs up, must give an error there, not kill the agent.
//!
//! [`counted`] is how a message says how many of something: `1 run`, `2 runs`.

use std::io::{self, ErrorKind, Write};

/// A standard stream whose `BrokenPipe` ends the process (see [`end_as_closed_pipe`]).
pub struct Pipe<W> {
    inner: W,
}

/// The process's stdout, locked, buffered by lines as `println!` is.
pub fn stdout() -> Pipe<io::StdoutLock<'static>> {
    Pipe {
        inner: io::stdout().lock(),
    }
}

/// The process's stderr, unbuffered. Each write takes the lock, so stderr can be handed out many
/// times (the trace, the tracing log, the last error message).
pub fn stderr() -> Pipe<io::Stderr> {
    Pipe { inner: io::stderr() }
}

impl<W: Write> Write for Pipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        ended_if_closed(self.inner.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        ended_if_closed(self.inner.write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        ended_if_closed(self.inner.flush())
    }
}

/// `result`, unless it is a `BrokenPipe`: then the reader has gone and the process ends.
fn ended_if_closed<T>(result: io::Result<T>) -> io::Result<T> {
    match result {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => end_as_closed_pipe(),
        result => result,
    }
}

/// Ends the process as SIGPIPE would have: killed by that signal, which shells report as status
/// 141 and `set -o pipefail` pipelines expect from `| head`. No message: nobody is reading.
pub fn end_as_closed_pipe() -> ! {
    #[cfg(unix)]
    {
        // SAFETY: `signal` and `raise` take plain integers and touch no memory of ours; restoring the
        // default action first makes `raise` terminate the process by SIGPIPE.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
    }
    // Not reached on Unix; elsewhere, the status a shell gives a process SIGPIPE ended.
    std::process::exit(141)
}

/// Where the process's stdout and stderr go: to one place (a terminal, `2>&1`), where what is
/// written to each shows in the order it was written, or to two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destinations {
    One,
    Two,
}

/// Whether stdout and stderr are the same open file (the same device and inode); `One` when
/// either cannot be inspected.
pub fn destinations() -> Destinations {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let identity = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let metadata = file.metadata().ok()?;
        Some((metadata.dev(), metadata.ino()))
    };
    match (identity(io::stdout().as_fd()), identity(io::stderr().as_fd())) {
        (Some(out), Some(err)) if out != err => Destinations::Two,
        _ => Destinations::One,
    }
}

/// `n` with the noun that counts it: `1 run`, `0 runs`, `3 runs` (`singular` for one, `plural`
/// otherwise). Every message that counts goes through it, so none says `1 runs`.
pub fn counted(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(super::counted(1, "run", "runs"), "1 run");
        assert_eq!(super::counted(0, "run", "runs"), "0 runs");
        assert_eq!(super::counted(2, "reply", "replies"), "2 replies");
    }
}
