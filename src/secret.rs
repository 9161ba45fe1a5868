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
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}
