//! The progress bars of `eval` and `index build` on a terminal (indicatif), drawn from the
//! library's progress events, with `eval`'s log lines and notes written above its bar; plain
//! progress lines when stderr is no terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::agent::trace::{LogOutput, Overlay};
use crate::docstore::index::{BuildProgress, BuildView};
use crate::eval::{PROGRESS_LINE_EVERY, Progress, ProgressView};

/// A bar when stderr is a terminal, else a progress line every [`PROGRESS_LINE_EVERY`]; notes
/// and log lines go to `log`.
pub fn for_stderr(log: &LogOutput) -> Progress {
    if std::io::stderr().is_terminal() {
        Progress::View(Arc::new(EvalBar::new(log.clone())))
    } else {
        Progress::Lines {
            every: PROGRESS_LINE_EVERY,
        }
    }
}

/// `index build`'s bar when stderr is a terminal, else a plain line every few seconds.
pub fn build_for_stderr() -> BuildProgress {
    if std::io::stderr().is_terminal() {
        BuildProgress::View(Arc::new(BuildBar(Mutex::new(None))))
    } else {
        BuildProgress::Lines
    }
}

/// `index build`'s bar, once started: bytes read of the input, pages, pages per second, ETA.
struct BuildBar(Mutex<Option<ProgressBar>>);

impl BuildBar {
    fn bar(&self) -> Option<ProgressBar> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl BuildView for BuildBar {
    fn started(&self, total_bytes: u64) {
        let bar = ProgressBar::new(total_bytes);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} read  {msg}  ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar);
    }

    fn advanced(&self, read: u64, pages: u64, pages_per_second: f64) {
        if let Some(bar) = self.bar() {
            bar.set_position(read);
            bar.set_message(format!("{pages} pages, {pages_per_second:.0} pages/s"));
        }
    }

    fn finished(&self) {
        if let Some(bar) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            bar.finish_and_clear();
        }
    }
}

/// A progress bar as an [`Overlay`] of the log: cleared while a line is written.
pub struct BarOverlay(pub ProgressBar);

impl Overlay for BarOverlay {
    fn suspend(&self, write: &mut dyn FnMut()) {
        self.0.suspend(write);
    }
}

/// A round's bar: position, running EM/F1, ETA.
pub struct EvalBar {
    log: LogOutput,
    bar: Mutex<Option<ProgressBar>>,
    /// Whether the round's first advance (its resumed runs) is still to come.
    awaiting_resumed: AtomicBool,
}

impl EvalBar {
    pub fn new(log: LogOutput) -> EvalBar {
        EvalBar {
            log,
            bar: Mutex::new(None),
            awaiting_resumed: AtomicBool::new(false),
        }
    }

    fn bar(&self) -> Option<ProgressBar> {
        self.bar.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ProgressView for EvalBar {
    fn started(&self, n_questions: usize) {
        let bar = ProgressBar::new(n_questions as u64);
        let style =
            ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} {msg} ETA {eta}")
                // invariant: the template is a literal (every run with a bar builds it)
                .expect("the progress template is valid")
                .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(500));
        self.log.show_bar(Arc::new(BarOverlay(bar.clone())));
        *self.bar.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar);
        self.awaiting_resumed.store(true, Ordering::SeqCst);
    }

    fn advanced(&self, done: usize, scores: Option<(f64, f64)>) {
        let Some(bar) = self.bar() else { return };
        bar.set_position(done as u64);
        if let Some((em, f1)) = scores {
            bar.set_message(format!("EM {em:.3} F1 {f1:.3}"));
        }
        // The ETA counts only questions run now, not the resumed ones.
        if self.awaiting_resumed.swap(false, Ordering::SeqCst) {
            bar.reset_eta();
        }
    }

    fn note(&self, message: &str) {
        self.log.line(message);
    }

    fn finished(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(PoisonError::into_inner).take() {
            self.log.hide_bar();
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use indicatif::{ProgressBar, ProgressDrawTarget, TermLike};

    use crate::agent::trace::LogOutput;

    use super::BarOverlay;

    /// A terminal and a log sharing one record of what reached the screen, in order.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        fn push(&self, entry: String) -> std::io::Result<()> {
            self.0.lock().unwrap().push(entry);
            Ok(())
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            40
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.push(format!("up {n}"))
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.push(format!("down {n}"))
        }
        fn move_cursor_right(&self, _n: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _n: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, text: &str) -> std::io::Result<()> {
            self.push(format!("bar {text}"))
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            self.push(format!("bar {text}"))
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.push("clear".to_owned())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Write for Screen {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.push(format!("log {}", String::from_utf8_lossy(bytes).trim_end()))?;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn log_lines_go_above_the_bar() {
        let screen = Screen::default();
        let bar =
            ProgressBar::with_draw_target(Some(3), ProgressDrawTarget::term_like(Box::new(screen.clone())));
        bar.set_position(1);
        bar.tick();
        let log = LogOutput::new(Box::new(screen.clone()));
        log.show_bar(Arc::new(BarOverlay(bar.clone())));
        let mut event = tracing_subscriber::fmt::MakeWriter::make_writer(&log);
        event.write_all(b"WARN retrying the model server\n").unwrap();
        drop(event);
        let entries = screen.0.lock().unwrap().clone();
        let logged = entries
            .iter()
            .position(|entry| entry == "log WARN retrying the model server")
            .unwrap_or_else(|| panic!("{entries:?}"));
        let before = &entries[..logged];
        let after = &entries[logged + 1..];
        // The bar drawn before is cleared before the line, and drawn again below it.
        let last_drawn = before
            .iter()
            .rposition(|entry| entry.starts_with("bar "))
            .unwrap();
        assert!(before[last_drawn..].contains(&"clear".to_owned()), "{entries:?}");
        assert!(after.iter().any(|entry| entry.starts_with("bar ")), "{entries:?}");

        // Without a bar, lines are written as they come.
        log.hide_bar();
        log.line("plain");
        assert_eq!(screen.0.lock().unwrap().last().unwrap(), "log plain");
    }
}
