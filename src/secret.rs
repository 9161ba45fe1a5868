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
}
