//! `ApiKey`: a secret that never shows in `Debug` output, logs, run files or error messages.

use std::fmt;

/// An API key (OpenAI, SerpApi). Its `Debug` redacts it, it has no `Display`, and it leaves the
/// process only where a request needs it (`expose`).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself, for the one place a request carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `<redacted>`, for text a server sends
    /// back (error messages quote the key they refused).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(self.0.as_str(), "<redacted>")
    }
}

/// Text that came from outside (a server's error message, a parser's complaint about a server's
/// body) with the key taken out and then shortened: redaction always runs on the whole text first,
/// so a key that straddles the cut cannot survive in part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RedactedMessage(String);

impl RedactedMessage {
    /// `text` without `key` (when there is one), then cut to `max_chars` characters.
    pub fn new(key: Option<&ApiKey>, text: &str, max_chars: usize) -> RedactedMessage {
        let redacted = match key {
            Some(key) => key.redact(text),
            None => text.to_owned(),
        };
        RedactedMessage(crate::http::shorten(&redacted, max_chars))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show() {
        let key = ApiKey::new("sk-XYZSECRET");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(
            key.redact("Incorrect API key provided: sk-XYZSECRET. See sk-XYZSECRET."),
            "Incorrect API key provided: <redacted>. See <redacted>."
        );
        assert_eq!(ApiKey::new("sk").redact("a sky"), "a sky");
    }

    #[test]
    fn redaction_runs_before_the_cut() {
        let key = ApiKey::new("sk-XYZSECRET");
        // The key straddles the 20th character.
        let text = format!("{}{}{}", "x".repeat(15), "sk-XYZSECRET", "y".repeat(30));
        let message = RedactedMessage::new(Some(&key), &text, 20);
        assert_eq!(message.as_str(), format!("{}<reda…", "x".repeat(15)));
        assert!(!message.as_str().contains("sk-XY"));
        assert_eq!(RedactedMessage::new(None, "abc", 2).as_str(), "ab…");
    }
}
