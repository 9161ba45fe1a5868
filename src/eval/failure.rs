//! `FailureClass`: what ended a question in an error — which server, which kind, which status —
//! read from the typed error, so that an outage is one class across questions whose messages
//! differ (a docstore error names each question's own URL).

use std::fmt;

use crate::agent::environment::EnvironmentError;
use crate::docstore::DocstoreError;
use crate::llm::LlmError;
use crate::tools::ToolError;
use crate::tools::websearch::WebSearchError;

/// Which part of the system failed, and how: two questions that failed alike have equal classes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FailureClass {
    pub origin: FailureOrigin,
    pub kind: FailureKind,
}

/// Who failed: a server (by `host[:port]`, never a path, query or credentials), a local docstore,
/// a tool, or a recording.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailureOrigin {
    /// The model server.
    Model { server: String },
    /// Wikipedia (or the mirror at `--wiki-url`).
    Wikipedia { server: String },
    /// A docstore read from disk: the page cache, an index, a corpus file.
    LocalDocstore,
    /// An extra tool, by its bracket name.
    Tool { name: String },
    /// A recorded run that holds no completion or observation for the step.
    Recording,
}

/// How it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// An HTTP status, after the retries when it is a transient one.
    Status(u16),
    /// An HTTP status with a `Retry-After` longer than the client waits.
    WaitTooLong(u16),
    /// No answer: refused, reset, timed out.
    Unreachable,
    /// A response over the client's size limit.
    TooLarge,
    /// A response that is not what the server should send (not a completion, not a whole page).
    BadResponse,
    /// `--offline` and the page or search is not cached.
    NotCached,
    /// The HTTP client could not be built.
    Client,
    /// A file could not be read or written (page cache, index, corpus).
    Files,
    /// The configuration cannot work.
    Config,
    /// The recording has no completion for the step.
    NoCompletion,
    /// The recording has no observation for the step.
    NoObservation,
    /// A tool's own failure, of a kind this classification does not know.
    ToolFailed,
}

impl FailureClass {
    pub fn of_llm(error: &LlmError) -> FailureClass {
        let model = |url: &str| FailureOrigin::Model {
            server: crate::base::http::server_name(url),
        };
        let (origin, kind) = match error {
            LlmError::ReplayExhausted { .. } | LlmError::ReplaySamplesExhausted { .. } => {
                (FailureOrigin::Recording, FailureKind::NoCompletion)
            }
            LlmError::Rejected { url, status, .. } => (model(url), FailureKind::Status(status.as_u16())),
            LlmError::NotFoundWithoutV1 { url, .. } | LlmError::NotFoundWithEndpoint { url, .. } => {
                (model(url), FailureKind::Status(404))
            }
            LlmError::GaveUp { url, status, .. } => (model(url), FailureKind::Status(status_code(status))),
            LlmError::WaitTooLong { url, status, .. } => {
                (model(url), FailureKind::WaitTooLong(status_code(status)))
            }
            LlmError::Client { url, .. } => (model(url), FailureKind::Client),
            LlmError::Transport { url, .. } | LlmError::Refused { url, .. } => {
                (model(url), FailureKind::Unreachable)
            }
            LlmError::TooLarge { url, .. } => (model(url), FailureKind::TooLarge),
            // The batch API down or its batches failing: like a server out of reach, it may fix itself.
            LlmError::NoBatchReply { url, .. } => (model(url), FailureKind::Unreachable),
            LlmError::InvalidResponse { url, .. } | LlmError::NoChoices { url } => {
                (model(url), FailureKind::BadResponse)
            }
            LlmError::ToolsRejected { url, status, .. } => (model(url), FailureKind::Status(status.as_u16())),
            LlmError::NoToolCalling { .. } => (FailureOrigin::Recording, FailureKind::NoCompletion),
            // The agent's verdict on a reply of only reasoning: the token cap is too low for the
            // model's thinking (the run ends with `max_tokens`, not an error), or the model or the
            // server's reasoning parser gives no answer (asked again, it gives none again).
            LlmError::CutInThinking { .. } | LlmError::ThinkingOnly => (
                FailureOrigin::Model {
                    server: String::new(),
                },
                FailureKind::Config,
            ),
        };
        FailureClass { origin, kind }
    }

    pub fn of_docstore(error: &DocstoreError) -> FailureClass {
        let wikipedia = |url: &str| FailureOrigin::Wikipedia {
            server: crate::base::http::server_name(url),
        };
        let (origin, kind) = match error {
            DocstoreError::Shared(shared) => return FailureClass::of_docstore(shared),
            DocstoreError::Status { url, status, .. } => (wikipedia(url), FailureKind::Status(*status)),
            DocstoreError::WaitTooLong { url, status, .. } => {
                (wikipedia(url), FailureKind::WaitTooLong(*status))
            }
            DocstoreError::Network { url, .. } | DocstoreError::Unreachable { url, .. } => {
                (wikipedia(url), FailureKind::Unreachable)
            }
            DocstoreError::NotAPage { url, .. } | DocstoreError::EmptyBody { url } => {
                (wikipedia(url), FailureKind::BadResponse)
            }
            DocstoreError::TooLarge { url, .. } => (wikipedia(url), FailureKind::TooLarge),
            DocstoreError::NotCached { url, .. } => (wikipedia(url), FailureKind::NotCached),
            DocstoreError::Client(_) => (FailureOrigin::LocalDocstore, FailureKind::Client),
            DocstoreError::Config(_) | DocstoreError::NoQuestionParagraphs { .. } => {
                (FailureOrigin::LocalDocstore, FailureKind::Config)
            }
            DocstoreError::Cache { .. }
            | DocstoreError::CorpusFile { .. }
            | DocstoreError::Corpus { .. }
            | DocstoreError::Index(_) => (FailureOrigin::LocalDocstore, FailureKind::Files),
        };
        FailureClass { origin, kind }
    }

    /// A tool's failure; a web search's by its status or transport, any other tool's as one kind.
    pub fn of_tool(error: &ToolError) -> FailureClass {
        let kind = match error.source.downcast_ref::<WebSearchError>() {
            Some(WebSearchError::Status { status, .. }) => FailureKind::Status(*status),
            Some(WebSearchError::WaitTooLong { status, .. }) => FailureKind::WaitTooLong(*status),
            Some(WebSearchError::Request { .. } | WebSearchError::Refused { .. }) => FailureKind::Unreachable,
            Some(WebSearchError::TooLarge { .. }) => FailureKind::TooLarge,
            Some(WebSearchError::Body { .. }) => FailureKind::BadResponse,
            Some(WebSearchError::OfflineMiss { .. }) => FailureKind::NotCached,
            Some(WebSearchError::Client(_)) => FailureKind::Client,
            Some(WebSearchError::MissingKey) => FailureKind::Config,
            Some(WebSearchError::CacheWrite { .. }) => FailureKind::Files,
            None => FailureKind::ToolFailed,
        };
        FailureClass {
            origin: FailureOrigin::Tool {
                name: error.tool.clone(),
            },
            kind,
        }
    }

    pub fn of_environment(error: &EnvironmentError) -> FailureClass {
        match error {
            EnvironmentError::Docstore(error) => FailureClass::of_docstore(error),
            EnvironmentError::Tool(error) => FailureClass::of_tool(error),
            EnvironmentError::NotRecorded { .. } => FailureClass {
                origin: FailureOrigin::Recording,
                kind: FailureKind::NoObservation,
            },
        }
    }
}

impl FailureKind {
    /// Whether a failure of this kind may fix itself, so that asking again later is worth it:
    /// no answer (refused, reset, timed out), 408, 429 and 5xx but 501, a wait longer than the
    /// client's. A status the server will give again (400, 401, 403, 404), a response over the
    /// limit or of the wrong shape, a page not cached offline and local failures do not.
    pub fn is_transient(self) -> bool {
        match self {
            FailureKind::Status(status) | FailureKind::WaitTooLong(status) => {
                reqwest::StatusCode::from_u16(status).is_ok_and(crate::base::http::is_transient_status)
            }
            FailureKind::Unreachable => true,
            FailureKind::TooLarge
            | FailureKind::BadResponse
            | FailureKind::NotCached
            | FailureKind::Client
            | FailureKind::Files
            | FailureKind::Config
            | FailureKind::NoCompletion
            | FailureKind::NoObservation
            | FailureKind::ToolFailed => false,
        }
    }
}

/// `503` from `503 Service Unavailable` (how [`LlmError`] keeps a status); 0 when there is none.
fn status_code(status: &str) -> u16 {
    status
        .split_whitespace()
        .next()
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

impl fmt::Display for FailureOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureOrigin::Model { server } => write!(f, "the model server `{server}`"),
            FailureOrigin::Wikipedia { server } => write!(f, "Wikipedia at `{server}`"),
            FailureOrigin::LocalDocstore => f.write_str("the docstore"),
            FailureOrigin::Tool { name } => write!(f, "tool `{name}`"),
            FailureOrigin::Recording => f.write_str("the recording"),
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = &self.origin;
        match self.kind {
            FailureKind::Status(status) => write!(f, "{origin} answered HTTP {status}"),
            FailureKind::WaitTooLong(status) => write!(
                f,
                "{origin} answered HTTP {status} and asked to wait longer than this client waits"
            ),
            FailureKind::Unreachable => write!(f, "{origin} could not be reached"),
            FailureKind::TooLarge => write!(f, "{origin} sent a response over the size limit"),
            FailureKind::BadResponse => write!(f, "{origin} sent a response it should not"),
            FailureKind::NotCached => write!(f, "{origin}: not cached, and the network is off"),
            FailureKind::Client => write!(f, "{origin}: the HTTP client could not be built"),
            FailureKind::Files => write!(f, "{origin} could not read or write its files"),
            FailureKind::Config => write!(f, "{origin} is not configured to work"),
            FailureKind::NoCompletion => write!(f, "{origin} has no completion for the step"),
            FailureKind::NoObservation => write!(f, "{origin} has no observation for the step"),
            FailureKind::ToolFailed => write!(f, "{origin} failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outage_is_one_class_whatever_the_url() {
        let status = |url: &str| {
            FailureClass::of_docstore(&DocstoreError::Status {
                url: url.to_owned(),
                status: 503,
                attempts: 5,
            })
        };
        let first = status("https://en.wikipedia.org/w/index.php?search=Arthur%27s+Magazine");
        let second = status("https://en.wikipedia.org/w/index.php?search=First+for+Women");
        assert_eq!(first, second);
        assert_eq!(
            first.to_string(),
            "Wikipedia at `en.wikipedia.org` answered HTTP 503"
        );
        assert_ne!(first, status("https://de.wikipedia.org/w/index.php?search=A"));
        let shared = FailureClass::of_docstore(&DocstoreError::Shared(std::sync::Arc::new(
            DocstoreError::Status {
                url: "https://en.wikipedia.org/w/index.php?search=B".to_owned(),
                status: 503,
                attempts: 1,
            },
        )));
        assert_eq!(shared, first);

        let gave_up = |status: &str| {
            FailureClass::of_llm(&LlmError::GaveUp {
                url: "http://127.0.0.1:8000/v1/completions".to_owned(),
                status: status.to_owned(),
                attempts: 3,
                message: "busy".to_owned(),
            })
        };
        assert_eq!(
            gave_up("503 Service Unavailable"),
            gave_up("503 Service Unavailable")
        );
        assert_ne!(
            gave_up("503 Service Unavailable"),
            gave_up("429 Too Many Requests")
        );
        assert_eq!(
            gave_up("429 Too Many Requests").to_string(),
            "the model server `127.0.0.1:8000` answered HTTP 429"
        );
    }
}
