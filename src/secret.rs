//! `ApiKey`: a secret that never shows in `Debug` output, logs, run files or error messages; and
//! the one rule that tells a secret by its name ([`is_secret_name`]), by which a setting is recorded
//! as its digest ([`redact_json`]).

use std::fmt;

use serde_json::{Map, Value};

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

/// The words that name a secret, alone or as the end of a word (`apikey`, `accesstoken`,
/// `clientsecret`): `max_tokens`' `tokens` and `top_k`'s `k` are not among them.
const SECRET_WORDS: [&str; 16] = [
    "key",
    "keys",
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "authentication",
    "cookie",
    "bearer",
];

/// Whether `name` (a `--llm-option`'s, a field's at any depth of its JSON value, a header's) says
/// its value is a secret: one of its words — split at anything but a letter or digit and at
/// camelCase humps — is, or ends with, one of [`SECRET_WORDS`]. `api_key`, `X-Api-Key`, `apiKey`,
/// `vertex_credentials`, `access_token`, `Authorization`, `client_secret` and `password` are;
/// `max_tokens`, `top_k`, `keyword` and `author` are not. A name that misleads the rule into a
/// secret costs only readability: its value is recorded as a digest, and still compares.
pub fn is_secret_name(name: &str) -> bool {
    words(name).any(|word| {
        let word = word.trim_end_matches(|c: char| c.is_ascii_digit());
        SECRET_WORDS.iter().any(|secret| word.ends_with(secret))
    })
}

/// The lower-cased words of a name: `X-Api-Key` → `x`, `api`, `key`; `apiKey` → `api`, `key`;
/// `APIKey` → `api`, `key`.
fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(|c: char| !c.is_alphanumeric())
        .flat_map(|part| {
            let chars: Vec<char> = part.chars().collect();
            let mut words = Vec::new();
            let mut start = 0;
            for idx in 1..chars.len() {
                let (before, here) = (chars[idx - 1], chars[idx]);
                let next_lower = chars.get(idx + 1).is_some_and(|c| c.is_lowercase());
                // `aB` starts a word at `B`; so does `ABc`, at `B` (`APIKey` → `API`, `Key`).
                let hump = here.is_uppercase()
                    && (before.is_lowercase()
                        || before.is_ascii_digit()
                        || (before.is_uppercase() && next_lower));
                if hump {
                    words.push(chars[start..idx].iter().collect::<String>());
                    start = idx;
                }
            }
            words.push(chars[start..].iter().collect::<String>());
            words
        })
        .filter(|word| !word.is_empty())
        .map(|word| word.to_lowercase())
}

/// Whether a text is a credential by its form, whatever its name: an HTTP authorization value
/// (`Bearer …`, `Basic …`), or a URL that carries a user name or a password.
fn is_secret_text(text: &str) -> bool {
    let text = text.trim();
    let scheme_and_token = text.split_once(' ').is_some_and(|(scheme, token)| {
        ["bearer", "basic"].contains(&scheme.to_ascii_lowercase().as_str())
            && !token.trim().is_empty()
            && !token.trim().contains(char::is_whitespace)
    });
    scheme_and_token
        || reqwest::Url::parse(text).is_ok_and(|url| !url.username().is_empty() || url.password().is_some())
}

/// `value` as a results line may record it: each field at any depth whose name is a secret
/// ([`is_secret_name`]), and each text that is a credential by its form (`Bearer …`, a URL with a
/// password), replaced by the digest of its JSON (`sha256:…`), so that two evaluations still
/// compare and no secret reaches a file. Everything else is kept as it is.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(redact_fields(fields)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::String(text) if is_secret_text(text) => secret_digest(value),
        other => other.clone(),
    }
}

/// The fields of an object as [`redact_json`] records them: a field whose name is a secret as its
/// value's digest, every other field's value redacted in its turn.
pub fn redact_fields(fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .map(|(name, value)| {
            let value = if is_secret_name(name) {
                secret_digest(value)
            } else {
                redact_json(value)
            };
            (name.clone(), value)
        })
        .collect()
}

/// The digest a secret value is recorded as: of its JSON text.
pub fn secret_digest(value: &Value) -> Value {
    Value::String(crate::digest::digest(value.to_string().as_bytes()))
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
    fn secret_names_are_words_not_substrings() {
        #[track_caller]
        fn check(name: &str, secret: bool) {
            assert_eq!(is_secret_name(name), secret, "{name}");
        }
        for name in [
            "api_key",
            "X-Api-Key",
            "apiKey",
            "APIKey",
            "apikey",
            "api-keys",
            "key",
            "vertex_credentials",
            "aws_secret_access_key",
            "access_token",
            "accessToken",
            "token",
            "Authorization",
            "proxy-authorization",
            "auth",
            "oauth",
            "client_secret",
            "password",
            "db_passwd",
            "Cookie",
            "private_key_pem",
            "prompt_cache_key",
            "apikey2",
        ] {
            check(name, true);
        }
        for name in [
            "max_tokens",
            "max_completion_tokens",
            "skip_special_tokens",
            "top_k",
            "top_p",
            "keyword",
            "keywords",
            "author",
            "authority",
            "seed",
            "reasoning_effort",
            "logit_bias",
            "chat_template_kwargs",
            "metadata",
            "",
        ] {
            check(name, false);
        }
    }

    #[test]
    fn secrets_are_digested_at_any_depth() {
        use serde_json::json;
        let value = json!({
            "api_key": "sk-PLANTED",
            "user": "me",
            "nested": {"deeper": [{"vertex_credentials": {"private_key": "PEM"}}, 3]},
            "extra_headers": [["Authorization", "Bearer sk-PLANTED"], ["X-Trace", "on"]],
            "endpoint": "https://user:sk-PLANTED@proxy.example/v1",
            "plain_url": "https://proxy.example/v1",
            "text": "Basic idea: search first",
            "max_tokens": 12,
        });
        let redacted = redact_json(&value);
        let text = redacted.to_string();
        assert!(!text.contains("sk-PLANTED") && !text.contains("PEM"), "{text}");
        assert_eq!(redacted["api_key"], secret_digest(&json!("sk-PLANTED")));
        assert_eq!(redacted["user"], "me");
        assert_eq!(redacted["nested"]["deeper"][1], 3);
        assert_eq!(
            redacted["nested"]["deeper"][0]["vertex_credentials"],
            secret_digest(&json!({"private_key": "PEM"}))
        );
        assert_eq!(redacted["extra_headers"][0][0], "Authorization");
        assert_eq!(redacted["extra_headers"][1], json!(["X-Trace", "on"]));
        assert_eq!(redacted["plain_url"], "https://proxy.example/v1");
        assert_eq!(redacted["text"], "Basic idea: search first");
        assert_eq!(redacted["max_tokens"], 12);
        // Nothing secret: the same value.
        let plain = json!({"seed": 7, "logit_bias": {"50256": -100}, "stop": ["a", "b"]});
        assert_eq!(redact_json(&plain), plain);
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
