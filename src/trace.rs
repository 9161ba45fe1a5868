//! `TracePrinter`: the live Thought / Action / Observation trace on stderr, coloured on a terminal.

use std::io::{IsTerminal, Write};

use crate::agent::StepEvent;

/// Whether the trace uses ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Always,
    Never,
}

impl Color {
    /// Colours when stderr is a terminal and `NO_COLOR` is not set.
    pub fn for_stderr() -> Color {
        if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Color::Always
        } else {
            Color::Never
        }
    }
}

/// Writes a run's events as they happen. Write errors are ignored; on [`TracePrinter::stderr`], a
/// closed pipe ends the process quietly (see [`crate::output`]).
pub struct TracePrinter {
    out: Box<dyn Write + Send>,
    color: Color,
    quiet: bool,
}

impl TracePrinter {
    pub fn new(out: Box<dyn Write + Send>, color: Color) -> TracePrinter {
        TracePrinter {
            out,
            color,
            quiet: false,
        }
    }

    /// The trace on stderr, coloured when stderr is a terminal.
    pub fn stderr() -> TracePrinter {
        TracePrinter::new(Box::new(crate::output::stderr()), Color::for_stderr())
    }

    /// A printer that prints nothing.
    pub fn silent() -> TracePrinter {
        TracePrinter {
            out: Box::new(std::io::sink()),
            color: Color::Never,
            quiet: true,
        }
    }

    pub fn is_silent(&self) -> bool {
        self.quiet
    }

    fn line(&mut self, style: &str, label: &str, text: &str) {
        let _ = match self.color {
            Color::Always => writeln!(self.out, "\x1b[{style}m{label}\x1b[0m {text}"),
            Color::Never => writeln!(self.out, "{label} {text}"),
        };
    }

    pub fn header(&mut self, label: &str, text: &str) {
        self.line("1", label, text);
    }

    pub fn event(&mut self, event: StepEvent<'_>) {
        match event {
            StepEvent::Decided {
                step,
                thought,
                action,
            } => {
                self.line("1;33", &format!("Thought {step}:"), thought);
                self.line("1;36", &format!("Action {step}:"), action);
            }
            StepEvent::Observed { step, observation } => {
                self.line("1;32", &format!("Observation {step}:"), observation.trim_end());
            }
        }
    }

    pub fn note(&mut self, text: &str) {
        self.line("2", "--", text);
    }

    pub fn blank(&mut self) {
        let _ = writeln!(self.out);
    }

    /// `text` with no newline after it, for a person to type after (`> `).
    pub fn prompt(&mut self, text: &str) {
        let _ = write!(self.out, "{text}");
        let _ = self.out.flush();
    }
}
