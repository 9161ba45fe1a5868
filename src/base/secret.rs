//! `ApiKey`: a secret that never shows in `Debug` output, logs, run files or error messages; the
//! one rule that tells a secret by its name ([`is_secret_name`]), by which a setting is recorded as
//! its digest ([`redact_json`]); and the [`Secrets`] one client was given, taken out of any text
//! from outside before it is shown.

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

/// Every secret one client was given — its API key, the user name and password of its base URL,
/// each secret value of its `--llm-option`s — so that text from outside (a server's error
/// message, which may quote any credential the request carried, or the request itself) is
/// stripped of each before it reaches an error, a log or a file. Its `Debug` shows none.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

/// A shorter text is no secret worth redacting: taking it out of a message would mangle it.
const MIN_SECRET_CHARS: usize = 4;

impl Secrets {
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// These secrets and `text` (when it is long enough to be one).
    pub fn with(mut self, text: &str) -> Secrets {
        let text = text.trim();
        if text.chars().count() >= MIN_SECRET_CHARS && !self.0.iter().any(|known| known == text) {
            self.0.push(text.to_owned());
            // Longest first: a secret that holds another is taken out whole.
            self.0.sort_by_key(|known| std::cmp::Reverse(known.len()));
        }
        self
    }

    /// These secrets and `key`.
    pub fn with_key(self, key: Option<&ApiKey>) -> Secrets {
        match key {
            Some(key) => self.with(key.expose()),
            None => self,
        }
    }

    /// These secrets and the user name and password `url` carries, as written and decoded.
    pub fn with_url_credentials(mut self, url: &str) -> Secrets {
        let Ok(url) = reqwest::Url::parse(url) else {
            return self;
        };
        for part in [url.username(), url.password().unwrap_or_default()] {
            let decoded = percent_encoding::percent_decode_str(part)
                .decode_utf8_lossy()
                .into_owned();
            self = self.with(part).with(&decoded);
        }
        self
    }

    /// These secrets and every secret `value` holds at any depth, as [`redact_json`] tells them:
    /// each text under a secret name, each credential by its form (the token of `Bearer …`, a
    /// URL's user name and password).
    pub fn with_json(self, value: &Value) -> Secrets {
        self.with_json_under(value, false)
    }

    fn with_json_under(mut self, value: &Value, secret: bool) -> Secrets {
        match value {
            Value::Object(fields) => {
                for (name, value) in fields {
                    self = self.with_json_under(value, secret || is_secret_name(name));
                }
                self
            }
            Value::Array(items) => items
                .iter()
                .fold(self, |secrets, item| secrets.with_json_under(item, secret)),
            Value::String(text) if secret || is_secret_text(text) => {
                self = self.with(text).with_url_credentials(text);
                match text.trim().split_once(' ') {
                    Some((_, token)) => self.with(token),
                    None => self,
                }
            }
            Value::Number(number) if secret => self.with(&number.to_string()),
            _ => self,
        }
    }

    /// `text` with every occurrence of each secret replaced by `<redacted>`.
    pub fn redact(&self, text: &str) -> String {
        self.0.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), "<redacted>")
        })
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets(<{} redacted>)", self.0.len())
    }
}

/// Text that came from outside (a server's error message, a parser's complaint about a server's
/// body) with the secrets taken out and then shortened: redaction always runs on the whole text
/// first, so a secret that straddles the cut cannot survive in part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RedactedMessage(String);

impl RedactedMessage {
    /// `text` without any of `secrets`, then cut to `max_chars` characters.
    pub fn new(secrets: &Secrets, text: &str, max_chars: usize) -> RedactedMessage {
        RedactedMessage(crate::base::text::shorten(&secrets.redact(text), max_chars).into_owned())
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

/// A shell command line (a `--tool NAME=COMMAND`'s) with each credential it recognises replaced by
/// `<redacted>`, and every other byte as written: a URL's user name and password and its query
/// parameters with a secret name (`?api_key=…`), the token after `Bearer` or `Basic`, the value
/// after a secret name as `NAME=VALUE`, `--NAME VALUE`, `--NAME=VALUE`, `NAME: VALUE` (a header)
/// or `"NAME":"VALUE"` (JSON), and the password of `-u user:password`. A value that names a
/// variable (`$TOKEN`, `${TOKEN}`) is no secret: the shell reads it from the environment, which
/// is the place for a secret. A command holding none of these comes back unchanged.
pub fn redact_command(command: &str) -> String {
    let tokens = command_tokens(command);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let is_reference = |text: &str| text.starts_with('$');
    for (idx, &(start, end)) in tokens.iter().enumerate() {
        let token = &command[start..end];
        let next = tokens
            .get(idx + 1)
            .map(|&(start, end)| (start, end, &command[start..end]));
        let after_next = tokens
            .get(idx + 2)
            .map(|&(start, end)| (start, end, &command[start..end]));
        if token.contains("://") {
            spans.extend(
                url_secrets(token)
                    .into_iter()
                    .map(|(from, to)| (start + from, start + to)),
            );
            continue;
        }
        let lower = token.to_ascii_lowercase();
        let bare = token.trim_start_matches('-');
        if let Some((name, value)) = token.split_once('=') {
            let name = name.trim_start_matches('-');
            if is_secret_name(name) && !value.is_empty() && !is_reference(value) {
                spans.push((start + token.len() - value.len(), end));
            }
            continue;
        }
        let value = match next {
            // `Bearer TOKEN`, `Basic TOKEN`.
            Some(next) if matches!(lower.as_str(), "bearer" | "basic") => Some(next),
            // `Authorization: …`, `X-Api-Key: …`: the value, unless it is a scheme (read above).
            Some(next) if token.ends_with(':') && is_secret_name(token.trim_end_matches(':')) => Some(next)
                .filter(|(_, _, text)| !matches!(text.to_ascii_lowercase().as_str(), "bearer" | "basic")),
            // `"api_key":"…"` in JSON.
            Some((_, _, ":")) if is_secret_name(token) => after_next,
            // `--token VALUE`.
            Some(next) if token.starts_with('-') && is_secret_name(bare) => Some(next),
            _ => None,
        };
        if let Some((from, to, text)) = value
            && !is_reference(text)
            && !text.starts_with('-')
        {
            spans.push((from, to));
            continue;
        }
        // `-u user:password`, `--user user:password`.
        if matches!(token, "-u" | "--user")
            && let Some((_, to, text)) = next
            && let Some((_, password)) = text.split_once(':')
            && !password.is_empty()
            && !is_reference(password)
        {
            spans.push((to - password.len(), to));
        }
    }
    spans.sort_unstable();
    let mut redacted = String::with_capacity(command.len());
    let mut done = 0;
    for (from, to) in spans {
        if from < done {
            continue;
        }
        redacted.push_str(&command[done..from]);
        redacted.push_str("<redacted>");
        done = to;
    }
    redacted.push_str(&command[done..]);
    redacted
}

/// The byte spans of a command line's words: split at whitespace and at quotes, so that a quoted
/// header (`'Authorization: Bearer …'`) is three words.
fn command_tokens(command: &str) -> Vec<(usize, usize)> {
    let mut tokens = Vec::new();
    let mut start = None;
    for (idx, c) in command.char_indices() {
        let delimiter = c.is_whitespace() || matches!(c, '\'' | '"');
        match (delimiter, start) {
            (true, Some(from)) => {
                tokens.push((from, idx));
                start = None;
            }
            (false, None) => start = Some(idx),
            _ => {}
        }
    }
    if let Some(from) = start {
        tokens.push((from, command.len()));
    }
    tokens
}

/// The spans of a URL's secrets within it: its user name and password, and the values of query
/// parameters with a secret name.
fn url_secrets(url: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let Some(scheme_end) = url.find("://") else {
        return spans;
    };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |idx| authority_start + idx);
    if let Some(at) = url[authority_start..authority_end].rfind('@') {
        spans.push((authority_start, authority_start + at));
    }
    if let Some(query_start) = url.find('?') {
        let query_end = url[query_start..]
            .find('#')
            .map_or(url.len(), |idx| query_start + idx);
        let mut pair_start = query_start + 1;
        for pair in url[query_start + 1..query_end].split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && is_secret_name(name)
                && !value.is_empty()
                && !value.starts_with('$')
            {
                let value_start = pair_start + name.len() + 1;
                spans.push((value_start, value_start + value.len()));
            }
            pair_start += pair.len() + 1;
        }
    }
    spans
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
    Value::String(crate::base::digest::digest(value.to_string().as_bytes()))
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
    fn commands_keep_everything_but_the_credentials_they_hold() {
        #[track_caller]
        fn check(command: &str, redacted: &str) {
            assert_eq!(redact_command(command), redacted, "{command}");
        }
        // Nothing to take out: byte for byte.
        for command in [
            "tr a-z A-Z",
            r#"curl -s "wttr.in/$(cat | tr " " +)?format=3""#,
            "curl -H \"Authorization: Bearer $TOKEN\" https://api.example/v1?key=$KEY",
            "python3 tool.py --max-tokens 10 --top-k=3 --keyword x",
        ] {
            check(command, command);
        }
        check(
            "curl -s -H 'Authorization: Bearer sk-1' https://u:pw@api.example/q?api_key=k1&q=x",
            "curl -s -H 'Authorization: Bearer <redacted>' https://<redacted>@api.example/q?api_key=<redacted>&q=x",
        );
        check(
            "API_KEY=k2 tool --token t3 --password=p4 -H 'X-Api-Key: k5'",
            "API_KEY=<redacted> tool --token <redacted> --password=<redacted> -H 'X-Api-Key: <redacted>'",
        );
        check(
            "curl -u me:pw6 -d '{\"api_key\":\"k7\",\"q\":1}' http://h",
            "curl -u me:<redacted> -d '{\"api_key\":\"<redacted>\",\"q\":1}' http://h",
        );
    }

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
        let secrets = Secrets::new().with_key(Some(&key));
        let message = RedactedMessage::new(&secrets, &text, 20);
        assert_eq!(message.as_str(), format!("{}<reda…", "x".repeat(15)));
        assert!(!message.as_str().contains("sk-XY"));
        assert_eq!(RedactedMessage::new(&Secrets::new(), "abc", 2).as_str(), "ab…");
    }

    #[test]
    fn every_secret_a_client_was_given_is_taken_out() {
        use serde_json::json;
        let secrets = Secrets::new()
            .with_key(Some(&ApiKey::new("sk-KEY1")))
            .with_url_credentials("http://us%40er:pa%3Ass@host/v1")
            .with_json(&json!({
                "metadata": {"api_key": "NESTED1", "run": "visible"},
                "vertex_credentials": {"private_key": "PEM1", "n": 12345},
                "extra_headers": [["X", "Bearer TOKEN1"]],
                "proxy": "http://puser:PPASS1@proxy/",
                "seed": 7,
            }))
            .with("abc");
        let text = "sk-KEY1 us@er pa:ss us%40er pa%3Ass NESTED1 PEM1 12345 TOKEN1 PPASS1 puser visible 7 abc";
        assert_eq!(
            secrets.redact(text),
            "<redacted> <redacted> <redacted> <redacted> <redacted> <redacted> <redacted> <redacted> \
             <redacted> <redacted> <redacted> visible 7 abc"
        );
        assert_eq!(format!("{secrets:?}"), "Secrets(<13 redacted>)");
    }
}
