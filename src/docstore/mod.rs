//! `Docstore`: where Search and Lookup read from — one explorer per question, with its own cursor.
//!
//! [`DocstoreConfig`] is what the commands build from their options; [`DocstoreConfig::open`]
//! gives the shared [`DocstoreSource`], which opens one [`Docstore`] explorer per question.
//!
//! - [`page`]: the opened page, sentence splitting and the Lookup cursor (pure).
//! - [`html`]: a search response's HTML → article / results / no results / disambiguation (pure).
//! - [`fetch`]: the polite HTTP client and the on-disk page cache.
//! - [`wikipedia`]: the Wikipedia explorer and source.
//! - [`index`]: the offline Wikipedia (a dump indexed with tantivy), also behind `corpus:FILE` and
//!   `distractor`.
//! - [`corpus`]: the small offline docstores: a question's context, a corpus file.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::base::profile::Profile;

pub mod python_codecs;
mod page;
pub mod html;
pub mod index;
mod corpus;
mod fetch;
mod wikipedia;

pub use corpus::{
    ContextExplorer, ContextHit, ContextIndex, CorpusSource, DistractorSource, context_paragraphs,
};
pub use fetch::{Fetcher, HttpPolicy, PageCache, PageCheck};
pub use html::parse_search_page;
use index::{IndexError, IndexSource, PageIndex};

pub use page::{
    LookupCursor, OBSERVATION_CHARS, Page, Reader, SENTENCE_CHARS, SUMMARY_SENTENCES, SearchOutcome, summary,
};
pub use wikipedia::{WikipediaExplorer, WikipediaSource, search_url};

/// A per-question explorer: the current page and the Lookup cursor live here.
///
/// `search` and `lookup` return the observation the model reads; misses ("Could not find ...")
/// are observations too. `Err` is for infrastructure failures after retries.
pub trait Docstore: Send {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>>;

    fn lookup(&mut self, keyword: &str) -> String;
}

/// An infrastructure failure of a docstore: the network, the cache, the configuration.
#[derive(Debug, thiserror::Error)]
pub enum DocstoreError {
    #[error("GET {url} answered HTTP {status} after {attempts} attempt(s)")]
    Status {
        url: String,
        status: u16,
        attempts: usize,
    },
    #[error(
        "GET {url} answered HTTP {status} and asked to wait {asked}, longer than the {max_wait_secs} s this client waits"
    )]
    WaitTooLong {
        url: String,
        status: u16,
        /// The server's own value: `1e30 s`, `250 ms`.
        asked: String,
        max_wait_secs: u64,
    },
    #[error("GET {url} failed after {attempts} attempt(s)")]
    Network {
        url: String,
        attempts: usize,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "cannot reach Wikipedia at `{host}` ({reason}): without a network, search an offline index (`--docstore index:DIR`, built by `index build`) or the pages cached before (`--offline`)"
    )]
    Unreachable {
        url: String,
        /// `host` or `host:port`, never credentials.
        host: String,
        /// `its name does not resolve`, `connection refused`.
        reason: &'static str,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "GET {url} did not answer with a whole search page (cut short, or not a wiki page) after {attempts} attempt(s)"
    )]
    NotAPage { url: String, attempts: usize },
    #[error("GET {url} answered with an empty page")]
    EmptyBody { url: String },
    #[error("GET {url} answered with more than {limit} bytes")]
    TooLarge { url: String, limit: usize },
    #[error(
        "offline: no cached page for `{query}` in {} (it would be fetched from {url}); run once without --offline to cache it",
        .cache_dir.display()
    )]
    NotCached {
        query: String,
        url: String,
        cache_dir: PathBuf,
    },
    #[error("page cache {}", .path.display())]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("{0}")]
    Config(String),
    #[error(
        "`--docstore distractor` searches each question's own paragraphs, which only `eval` has (a HotpotQA file with contexts); `{command}` can search Wikipedia, `--docstore index:DIR` (built by `index build`) or `--docstore corpus:FILE` (that file's paragraphs pooled, or JSON Lines pages)"
    )]
    NoQuestionParagraphs { command: &'static str },
    #[error("cannot read the corpus {}", .path.display())]
    CorpusFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corpus {}, {record}: {message}", .path.display())]
    Corpus {
        path: PathBuf,
        record: String,
        message: String,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A failure of a fetch that several explorers waited on together.
    #[error(transparent)]
    Shared(Arc<DocstoreError>),
}

/// A paragraph that comes with a question (HotpotQA's distractor setting): its title and sentences.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContextParagraph {
    pub title: String,
    pub sentences: Vec<String>,
}

/// Opens a fresh explorer for each question: Wikipedia (shared client and cache underneath), or an
/// offline docstore built from the question's own context, a corpus file or an index.
pub trait DocstoreSource: Send + Sync {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore>;

    /// Which docstore answers, as runs record it.
    fn info(&self) -> DocstoreInfo {
        DocstoreInfo {
            kind: "custom".to_owned(),
            snapshot: None,
        }
    }
}

/// The docstore a run was answered from (`"docstore": {"kind", "snapshot"}` in a run file): its
/// kind (`wikipedia`, `distractor`, `corpus`, `index`) and, for a frozen one, its snapshot id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocstoreInfo {
    pub kind: String,
    #[serde(default)]
    pub snapshot: Option<String>,
}

impl std::fmt::Display for DocstoreInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.snapshot {
            Some(snapshot) => write!(f, "{} (snapshot {snapshot})", self.kind),
            None => f.write_str(&self.kind),
        }
    }
}

/// Which docstore Search and Lookup read from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DocstoreKind {
    /// Live Wikipedia (or a mirror at `wiki_url`), through the page cache.
    #[default]
    Wikipedia,
    /// Each question's own context paragraphs (HotpotQA's distractor setting).
    Distractor,
    /// A fixed set of pages: JSON Lines `{"title", "text"}`, or a HotpotQA file's contexts pooled.
    Corpus(PathBuf),
    /// An index built by `index build` (a frozen Wikipedia dump).
    Index(PathBuf),
}

impl FromStr for DocstoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "wikipedia" => Ok(DocstoreKind::Wikipedia),
            "distractor" => Ok(DocstoreKind::Distractor),
            _ => match (s.strip_prefix("corpus:"), s.strip_prefix("index:")) {
                (Some(path), _) if !path.is_empty() => Ok(DocstoreKind::Corpus(PathBuf::from(path))),
                (_, Some(path)) if !path.is_empty() => Ok(DocstoreKind::Index(PathBuf::from(path))),
                _ => Err(format!(
                    "unknown docstore `{s}`, expected `wikipedia`, `distractor`, `corpus:FILE` or `index:DIR`"
                )),
            },
        }
    }
}

/// The default Wikipedia.
pub const DEFAULT_WIKI_URL: &str = "https://en.wikipedia.org";

/// The User-Agent sent unless configured: Wikimedia asks every client to say who it is and how to
/// reach its operator, so set `--user-agent` / `REACT_USER_AGENT` to one with your contact.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "react-docstore/",
    env!("CARGO_PKG_VERSION"),
    " (ReAct multi-hop question answering; set REACT_USER_AGENT to add your contact) reqwest"
);

/// Everything needed to open a docstore; the commands build it from their options.
#[derive(Debug, Clone)]
pub struct DocstoreConfig {
    pub kind: DocstoreKind,
    /// Which rules the explorers follow.
    pub profile: Profile,
    /// The Wikipedia to search, without a trailing slash: `https://en.wikipedia.org`.
    pub wiki_url: String,
    /// Where fetched pages are kept; `None` for the user's cache directory
    /// (see [`default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Serve only from the cache; a miss is an error.
    pub offline: bool,
    pub user_agent: String,
    pub http: HttpPolicy,
}

impl DocstoreConfig {
    /// Live Wikipedia under `profile`, with the default cache and politeness settings.
    pub fn new(profile: Profile) -> DocstoreConfig {
        DocstoreConfig {
            kind: DocstoreKind::Wikipedia,
            profile,
            wiki_url: DEFAULT_WIKI_URL.to_owned(),
            cache_dir: None,
            offline: false,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            http: HttpPolicy::default(),
        }
    }

    /// The cache directory in use: the configured one, or the user's.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(default_cache_dir)
    }

    /// The source every question of a run opens its explorer from, under this profile, for
    /// `eval` (every kind). Opening touches neither the network nor the disk; the first search does.
    pub fn open(&self) -> Result<Arc<dyn DocstoreSource>, DocstoreError> {
        Ok(self.open_for(Opener::Eval)?.source(self.profile))
    }

    /// The sources of both profiles, for `eval` (every kind).
    pub fn open_sources(&self) -> Result<DocstoreSources, DocstoreError> {
        Ok(self.open_for(Opener::Eval)?.sources())
    }

    /// The one place a docstore spec is opened, for every command and for `serve`: the wiki URL
    /// checked, an index or a corpus file read; a kind `opener` cannot serve is refused
    /// ([`DocstoreKind::check_opener`]).
    pub fn open_for(&self, opener: Opener) -> Result<OpenedDocstore, DocstoreError> {
        self.kind.check_opener(opener)?;
        match &self.kind {
            DocstoreKind::Wikipedia => {
                // Credentials in the URL go with each request as a header (`Fetcher::new`): the
                // URL every search builds, caches and names carries none.
                let wiki_url = crate::base::http::without_credentials(self.wiki_url.trim_end_matches('/'));
                match reqwest::Url::parse(&wiki_url) {
                    Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
                    _ => {
                        return Err(DocstoreError::Config(format!(
                            "invalid wiki URL `{}`: expected http(s)://host, e.g. {DEFAULT_WIKI_URL}",
                            wiki_url
                        )));
                    }
                }
                Ok(OpenedDocstore::Wikipedia {
                    fetcher: Fetcher::new(self),
                    wiki_url,
                })
            }
            DocstoreKind::Distractor => Ok(OpenedDocstore::Distractor),
            DocstoreKind::Corpus(path) => Ok(OpenedDocstore::Index {
                index: Arc::new(PageIndex::in_memory(corpus::load_pages(path)?, "corpus")?),
                kind: "corpus",
            }),
            DocstoreKind::Index(dir) => Ok(OpenedDocstore::Index {
                index: Arc::new(PageIndex::open(dir)?.0),
                kind: "index",
            }),
        }
    }
}

/// Who opens a docstore: `eval`, which has each question's own paragraphs, or another command,
/// which has none (named in its refusal of `distractor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    Eval,
    Command(&'static str),
}

impl DocstoreKind {
    /// The one refusal of a docstore a command cannot serve: `distractor` for all but `eval`.
    pub fn check_opener(&self, opener: Opener) -> Result<(), DocstoreError> {
        match (self, opener) {
            (DocstoreKind::Distractor, Opener::Command(command)) => {
                Err(DocstoreError::NoQuestionParagraphs { command })
            }
            _ => Ok(()),
        }
    }
}

/// A docstore spec opened ([`DocstoreConfig::open_for`]): what every command's sources and
/// `serve`'s docstore are made of.
pub enum OpenedDocstore {
    /// Live Wikipedia at `wiki_url` (no final `/`), through one client and page cache.
    Wikipedia { fetcher: Fetcher, wiki_url: String },
    /// Each question's own paragraphs.
    Distractor,
    /// An index held open: a dump's (`index`), or a corpus file's built in memory (`corpus`).
    Index {
        index: Arc<PageIndex>,
        kind: &'static str,
    },
}

impl OpenedDocstore {
    /// The source of `profile`.
    pub fn source(&self, profile: Profile) -> Arc<dyn DocstoreSource> {
        match self {
            OpenedDocstore::Wikipedia { fetcher, wiki_url } => {
                Arc::new(WikipediaSource::new(fetcher.clone(), wiki_url.clone(), profile))
            }
            OpenedDocstore::Distractor => Arc::new(DistractorSource::new(profile)),
            OpenedDocstore::Index { index, kind } => Arc::new(IndexSource::new(index.clone(), kind, profile)),
        }
    }

    /// The sources of both profiles, sharing the client, cache or index.
    pub fn sources(&self) -> DocstoreSources {
        DocstoreSources {
            paper: self.source(Profile::Paper),
            default: self.source(Profile::Default),
        }
    }
}

/// A source for each profile, sharing one client and cache.
#[derive(Clone)]
pub struct DocstoreSources {
    paper: Arc<dyn DocstoreSource>,
    default: Arc<dyn DocstoreSource>,
}

impl DocstoreSources {
    pub fn get(&self, profile: Profile) -> Arc<dyn DocstoreSource> {
        match profile {
            Profile::Paper => self.paper.clone(),
            Profile::Default => self.default.clone(),
        }
    }
}

/// The user's cache directory for react-docstore: `$XDG_CACHE_HOME/react-docstore`, else
/// `~/.cache/react-docstore` (`~/Library/Caches/react-docstore` on macOS,
/// `%LOCALAPPDATA%\react-docstore\cache` on Windows), else one under the temporary directory.
pub fn default_cache_dir() -> PathBuf {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(windows) {
        env_dir("LOCALAPPDATA").map(|dir| dir.join("react-docstore").join("cache"))
    } else if cfg!(target_os = "macos") {
        env_dir("HOME").map(|home| home.join("Library").join("Caches").join("react-docstore"))
    } else {
        env_dir("XDG_CACHE_HOME")
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("react-docstore"))
            .or_else(|| env_dir("HOME").map(|home| home.join(".cache").join("react-docstore")))
    };
    base.unwrap_or_else(|| std::env::temp_dir().join("react-docstore-cache"))
}

/// How long one request may take before it is retried.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstore_kinds_parse() {
        assert_eq!("wikipedia".parse(), Ok(DocstoreKind::Wikipedia));
        assert_eq!("distractor".parse(), Ok(DocstoreKind::Distractor));
        assert_eq!(
            "corpus:data/pages.jsonl".parse(),
            Ok(DocstoreKind::Corpus("data/pages.jsonl".into()))
        );
        assert!("corpus:".parse::<DocstoreKind>().is_err());
        assert_eq!(
            "index:wiki-2017".parse(),
            Ok(DocstoreKind::Index("wiki-2017".into()))
        );
        assert!("index:".parse::<DocstoreKind>().is_err());
        assert_eq!(
            "wiki".parse::<DocstoreKind>().unwrap_err(),
            "unknown docstore `wiki`, expected `wikipedia`, `distractor`, `corpus:FILE` or `index:DIR`"
        );
    }

    #[test]
    fn a_wiki_url_must_be_http() {
        for url in ["en.wikipedia.org", "ftp://example.org", "https://"] {
            let config = DocstoreConfig {
                wiki_url: url.to_owned(),
                ..DocstoreConfig::new(Profile::Default)
            };
            let error = config.open().err().expect("rejected");
            assert!(error.to_string().starts_with("invalid wiki URL"), "{error}");
        }
        let config = DocstoreConfig {
            wiki_url: "http://localhost:8080/".to_owned(),
            ..DocstoreConfig::new(Profile::Default)
        };
        assert!(config.open().is_ok());
    }
}
