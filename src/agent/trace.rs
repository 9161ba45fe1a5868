//! `TracePrinter`: the live Thought / Action / Observation trace on stderr, coloured on a terminal;
//! `LogOutput`: where log lines and notes go — stderr, above the progress bar while one is drawn.

use std::io::{BufWriter, IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

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

/// When the trace's buffered lines are written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// After every line, in one write: the trace of a live run, read as it happens.
    EachLine,
    /// At the end of each run ([`TracePrinter::end_run`]): a replay, which waits for nothing,
    /// writes a run's trace in one write, before the run's line on stdout when both streams go
    /// to one place (a terminal, `2>&1`).
    EachRun,
    /// When the buffer is full and when the printer is dropped: a replay whose stdout goes
    /// elsewhere, where the order between the two streams cannot be seen.
    WhenFull,
}

/// How much of a model's reasoning the trace shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShowReasoning {
    /// One dimmed line, cut to [`REASONING_LINE_CHARS`] characters: that the model thought, and
    /// how it began.
    #[default]
    Line,
    /// All of it, dimmed (`--show-reasoning`).
    Whole,
}

/// How much of the reasoning one trace line shows by default.
pub const REASONING_LINE_CHARS: usize = 100;

/// Writes a run's events as they happen. Write errors are ignored; on [`TracePrinter::stderr`], a
/// closed pipe ends the process quietly (see [`crate::base::output`]). Lines are buffered and written
/// whole ([`Flush`] says when); the buffer is written out when the printer is dropped.
pub struct TracePrinter {
    out: BufWriter<Box<dyn Write + Send>>,
    color: Color,
    flush: Flush,
    quiet: bool,
    reasoning: ShowReasoning,
}

impl TracePrinter {
    pub fn new(out: Box<dyn Write + Send>, color: Color) -> TracePrinter {
        TracePrinter {
            out: BufWriter::with_capacity(TRACE_BUFFER_BYTES, out),
            color,
            flush: Flush::EachLine,
            quiet: false,
            reasoning: ShowReasoning::Line,
        }
    }

    /// The trace on stderr, coloured when stderr is a terminal, each line written as it comes.
    pub fn stderr() -> TracePrinter {
        TracePrinter::new(Box::new(crate::base::output::stderr()), Color::for_stderr())
    }

    /// This printer, written out when `flush` says.
    pub fn flushed(self, flush: Flush) -> TracePrinter {
        TracePrinter { flush, ..self }
    }

    /// This printer, showing reasoning as `shown` says.
    pub fn showing_reasoning(self, shown: ShowReasoning) -> TracePrinter {
        TracePrinter {
            reasoning: shown,
            ..self
        }
    }

    /// A printer that prints nothing.
    pub fn silent() -> TracePrinter {
        TracePrinter {
            quiet: true,
            ..TracePrinter::new(Box::new(std::io::sink()), Color::Never)
        }
    }

    pub fn is_silent(&self) -> bool {
        self.quiet
    }

    /// Writes out the lines buffered so far.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// A run's trace is complete: written out now unless the printer waits for a full buffer.
    pub fn end_run(&mut self) {
        if self.flush != Flush::WhenFull {
            self.flush();
        }
    }

    fn line(&mut self, style: &str, label: &str, text: &str) {
        let _ = match self.color {
            Color::Always => writeln!(self.out, "\x1b[{style}m{label}\x1b[0m {text}"),
            Color::Never => writeln!(self.out, "{label} {text}"),
        };
        if self.flush == Flush::EachLine {
            self.flush();
        }
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
            StepEvent::Reasoned { number, reasoning } => {
                let label = match number {
                    Some(number) => format!("Reasoning {number}:"),
                    None => "Reasoning:".to_owned(),
                };
                let text = match self.reasoning {
                    ShowReasoning::Whole => reasoning.trim().to_owned(),
                    ShowReasoning::Line => reasoning_line(reasoning),
                };
                self.line("2", &label, &text);
            }
            StepEvent::Acted { step, action } => {
                self.line("1;36", &format!("Action {step}:"), action);
            }
            StepEvent::Sampled {
                index,
                thought,
                answer,
            } => {
                let number = index.map(|index| format!(" {index}")).unwrap_or_default();
                if let Some(thought) = thought {
                    let label = match index {
                        Some(index) => format!("Sample {index}:"),
                        None => "Thought:".to_owned(),
                    };
                    self.line("1;33", &label, thought);
                }
                // A single completion's answer is the run's: `ask` prints it as `Answer:`.
                if index.is_some() {
                    self.line("1;36", &format!("Answer{number}:"), answer.unwrap_or("(none)"));
                } else if answer.is_none() {
                    self.note("the completion holds no answer");
                }
            }
            StepEvent::Voted {
                answer,
                votes,
                samples,
            } => {
                let text = match answer {
                    Some(answer) => format!("{answer} ({votes} of {samples} samples)"),
                    None => format!("no sample of {samples} holds an answer"),
                };
                self.line("1;35", "Majority:", &text);
            }
            StepEvent::BackedOff { from, to, reason } => {
                self.note(&format!("backing off from {from} to {to}: {reason}"));
            }
        }
    }

    pub fn note(&mut self, text: &str) {
        self.line("2", "--", text);
    }

    pub fn blank(&mut self) {
        let _ = writeln!(self.out);
        if self.flush == Flush::EachLine {
            self.flush();
        }
    }

    /// `text` with no newline after it, for a person to type after (`> `).
    pub fn prompt(&mut self, text: &str) {
        let _ = write!(self.out, "{text}");
        let _ = self.out.flush();
    }
}

/// Reasoning on one line: its words, whitespace runs as one space, cut to
/// [`REASONING_LINE_CHARS`] characters with `…`.
fn reasoning_line(reasoning: &str) -> String {
    let line = reasoning.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::base::text::shorten(&line, REASONING_LINE_CHARS).into_owned()
}

/// The trace's buffer: a replayed run's trace fits whole, so it is written in one go.
const TRACE_BUFFER_BYTES: usize = 64 * 1024;

/// Something drawn below the log lines, such as the binary's progress bar: cleared while a line
/// is written, and drawn again after it.
pub trait Overlay: Send + Sync {
    /// Runs `write` with the overlay cleared, then draws it again.
    fn suspend(&self, write: &mut dyn FnMut());
}

/// Where log lines (tracing events, warnings, an evaluation's notes) are written: stderr by
/// default. While an [`Overlay`] (a progress bar) is shown, each line is written with it cleared
/// and drawn again after it, so lines stack above the bar and no stale copy of the bar is left
/// between them. Cheap to clone; clones share the overlay. Write errors are ignored.
#[derive(Clone)]
pub struct LogOutput {
    shared: Arc<LogShared>,
}

struct LogShared {
    out: Mutex<Box<dyn Write + Send>>,
    bar: Mutex<Option<Arc<dyn Overlay>>>,
}

impl LogOutput {
    /// Lines to stderr.
    pub fn stderr() -> LogOutput {
        LogOutput::new(Box::new(crate::base::output::stderr()))
    }

    /// Lines to `out` (tests capture them).
    pub fn new(out: Box<dyn Write + Send>) -> LogOutput {
        LogOutput {
            shared: Arc::new(LogShared {
                out: Mutex::new(out),
                bar: Mutex::new(None),
            }),
        }
    }

    /// Lines written from now on go above `bar`, until [`LogOutput::hide_bar`].
    pub fn show_bar(&self, bar: Arc<dyn Overlay>) {
        *self.shared.bar.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar);
    }

    pub fn hide_bar(&self) {
        *self.shared.bar.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Writes `line` and a newline.
    pub fn line(&self, line: &str) {
        let mut text = line.to_owned();
        text.push('\n');
        self.write_all(text.as_bytes());
    }

    fn write_all(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let write = || {
            let mut out = self.shared.out.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = out.write_all(bytes).and_then(|()| out.flush());
        };
        let bar = self
            .shared
            .bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match bar {
            Some(bar) => bar.suspend(&mut || write()),
            None => write(),
        }
    }
}

impl std::fmt::Debug for LogOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogOutput").finish_non_exhaustive()
    }
}

/// One log event being formatted: buffered, then written whole when dropped.
pub struct LogEvent {
    output: LogOutput,
    buffer: Vec<u8>,
}

impl Write for LogEvent {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        self.output.write_all(&self.buffer);
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogOutput {
    type Writer = LogEvent;

    fn make_writer(&'a self) -> LogEvent {
        LogEvent {
            output: self.clone(),
            buffer: Vec::new(),
        }
    }
}

/// How log events are written. A warning or an error is its message alone, one plain line
/// (`model server localhost:8080: HTTP 429 Too Many Requests; retrying in 2.1 s, attempt 2 of 5`):
/// what a user reads. Lower levels (`RUST_LOG=info`, `debug`, `trace`) keep their level and
/// module, for whoever asked for them.
#[derive(Debug)]
pub struct LogFormat {
    detailed: tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Full, ()>,
}

impl Default for LogFormat {
    /// Without timestamps: a log line sits among the trace's, which have none.
    fn default() -> LogFormat {
        LogFormat {
            detailed: tracing_subscriber::fmt::format::Format::default().without_time(),
        }
    }
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for LogFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        // Levels order from ERROR (the least) to TRACE.
        if *event.metadata().level() <= tracing::Level::WARN {
            ctx.field_format().format_fields(writer.by_ref(), event)?;
            return writeln!(writer);
        }
        self.detailed.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{LogOutput, Overlay};

    /// An overlay and a log sharing one record of what reached the screen, in order.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Overlay for Screen {
        fn suspend(&self, write: &mut dyn FnMut()) {
            self.0.lock().unwrap().push("cleared".to_owned());
            write();
            self.0.lock().unwrap().push("drawn".to_owned());
        }
    }

    impl std::io::Write for Screen {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let line = format!("log {}", String::from_utf8_lossy(bytes).trim_end());
            self.0.lock().unwrap().push(line);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn log_lines_are_written_with_the_overlay_cleared() {
        let screen = Screen::default();
        let log = LogOutput::new(Box::new(screen.clone()));
        log.show_bar(Arc::new(screen.clone()));
        log.line("retrying the model server");
        log.hide_bar();
        log.line("plain");
        assert_eq!(
            *screen.0.lock().unwrap(),
            ["cleared", "log retrying the model server", "drawn", "log plain"]
        );
    }
}

#[cfg(test)]
mod reasoning_tests {
    use super::*;

    #[test]
    fn reasoning_shows_on_one_cut_line_unless_asked_whole() {
        assert_eq!(
            reasoning_line("  Let me\n\nthink   about it. "),
            "Let me think about it."
        );
        let long = "word ".repeat(50);
        let line = reasoning_line(&long);
        assert_eq!(line.chars().count(), REASONING_LINE_CHARS + 1);
        assert!(line.ends_with('…'));
    }
}
