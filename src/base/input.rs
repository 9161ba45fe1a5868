//! The line-by-line input of the interactive commands, `chat` and `explore`: one reader, one
//! numbering of lines (for the notes about skipped ones) and one rule for leaving — the end of
//! input, or a line `exit` or `quit`, whether a person types it or a script pipes it.

use std::io::{self, BufRead};

/// Whether a person types the input (then how to leave and a `> ` prompt are shown on stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interaction {
    Terminal,
    Piped,
}

/// What a person at a terminal is told first.
pub const LEAVE_HINT: &str = "Ctrl-D (end of input) or `exit` ends the session.";

/// The words that end a session.
const LEAVE_WORDS: [&str; 2] = ["exit", "quit"];

/// One line of input, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputLine {
    Text(String),
    Blank,
    /// A line that is not UTF-8, shown with replacement characters.
    NotUtf8(String),
}

impl InputLine {
    fn read(bytes: &[u8]) -> InputLine {
        match std::str::from_utf8(bytes) {
            Ok(text) if text.trim().is_empty() => InputLine::Blank,
            Ok(text) => InputLine::Text(text.trim().to_owned()),
            Err(_) => InputLine::NotUtf8(String::from_utf8_lossy(bytes).trim().to_owned()),
        }
    }
}

/// Reads a session's lines, numbering them from 1.
pub struct InputLines<'a> {
    input: &'a mut dyn BufRead,
    n_read: usize,
    bytes: Vec<u8>,
}

impl<'a> InputLines<'a> {
    pub fn new(input: &'a mut dyn BufRead) -> InputLines<'a> {
        InputLines {
            input,
            n_read: 0,
            bytes: Vec::new(),
        }
    }

    /// The next line with its number, or `None` when the session ends (end of input, `exit`,
    /// `quit`).
    pub fn next_line(&mut self) -> io::Result<Option<(usize, InputLine)>> {
        self.bytes.clear();
        if self.input.read_until(b'\n', &mut self.bytes)? == 0 {
            return Ok(None);
        }
        self.n_read += 1;
        let line = InputLine::read(&self.bytes);
        if let InputLine::Text(text) = &line
            && LEAVE_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word))
        {
            return Ok(None);
        }
        Ok(Some((self.n_read, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<(usize, InputLine)> {
        let mut input = input;
        let mut reader = InputLines::new(&mut input);
        std::iter::from_fn(|| reader.next_line().unwrap()).collect()
    }

    #[test]
    fn lines_are_trimmed_numbered_and_classified() {
        assert_eq!(
            lines(b"  Search[Colorado]  \n\n\xff\xfe\nLookup[1844]"),
            [
                (1, InputLine::Text("Search[Colorado]".to_owned())),
                (2, InputLine::Blank),
                (3, InputLine::NotUtf8("\u{fffd}\u{fffd}".to_owned())),
                (4, InputLine::Text("Lookup[1844]".to_owned())),
            ]
        );
    }

    #[test]
    fn exit_or_quit_ends_the_session_whatever_the_input() {
        assert_eq!(lines(b"a\nEXIT\nb\n"), [(1, InputLine::Text("a".to_owned()))]);
        assert_eq!(lines(b" quit \nb\n"), []);
        assert_eq!(
            lines(b"exit now\n"),
            [(1, InputLine::Text("exit now".to_owned()))]
        );
    }
}
