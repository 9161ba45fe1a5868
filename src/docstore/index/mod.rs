//! The offline Wikipedia: a frozen dump indexed once with tantivy, then searched like Wikipedia
//! with no network and no rate limit (`index build`, `--docstore index:DIR`). The same search
//! serves `corpus:FILE` from an index in memory; the distractor setting computes it straight from
//! a question's ten pages (`corpus::ContextIndex`, held equal to it by a differential test).
//!
//! - [`title`]: MediaWiki title normalisation and title similarity (pure).
//! - [`titles`]: a dump index's table of folded titles (Wikipedia's "Go", format v3).
//! - [`neighbours`]: a dump index's title words by their deletions: the words one edit away.
//! - [`schema`]: the fields, the tokenizer, [`IndexedPage`] and its stored form.
//! - [`formats`]: HotpotQA, KILT, FEVER, DPR and JSON Lines records → pages (pure).
//! - [`input`]: files, directories, compressed streams, tar and zip → lines.
//! - [`build`]: the parallel, crash-safe build.
//! - [`manifest`]: what an index holds; its snapshot id.
//! - [`search`]: [`PageIndex`], title matching and the ranked, typo-tolerant search.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::page::SearchOutcome;
use super::page::{Reader, SearchStep};
use super::{ContextParagraph, Docstore, DocstoreError, DocstoreInfo, DocstoreSource};
use crate::base::profile::Profile;

pub mod title;
pub mod title_table;
mod schema;
mod formats;
mod manifest;
mod input;
mod read_only;
pub mod neighbours;
mod build;
mod search;

pub use build::{BuildConfig, BuildProgress, BuildReport, BuildView, MalformedRecords, build};
pub use formats::{DumpFormat, jsonl_page};
pub use manifest::{IndexInfo, Manifest, parse_size};
pub use schema::{IndexedPage, analyzer};
pub use search::{PageIndex, RankedPage, SearchHit, TitleMatch};

/// `corpus:FILE` naming `origin` when it is a file (not a member of an archive).
fn corpus_spec(origin: &str) -> String {
    if Path::new(origin).is_file() {
        format!("corpus:{origin}")
    } else {
        "corpus:FILE".to_owned()
    }
}

/// A failure to build, open or search an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("no sources to index")]
    NoSources,
    #[error("cannot read `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read `{origin}`: {message}")]
    Archive { origin: String, message: String },
    #[error(
        "cannot tell the format of `{origin}` from its first line (`{line}`): pass --format hotpotqa, kilt, fever, dpr or jsonl"
    )]
    UnknownFormat { origin: String, line: String },
    #[error(
        "`{origin}` is a question file, not a dump of pages, and no `--format` reads it: a HotpotQA file's context paragraphs are searched without an index, with `--docstore {}` (or `--docstore distractor` in `eval`, each question its own)",
        corpus_spec(origin)
    )]
    QuestionFile { origin: String },
    #[error(
        "`{origin}` is a FEVER claims file, not a dump of pages: index FEVER's `wiki-pages/*.jsonl` (`--format fever`) and give the claims to `eval`"
    )]
    ClaimFile { origin: String },
    #[error("malformed record (--strict): {0}")]
    Malformed(build::Malformed),
    #[error("the sources hold no pages ({malformed} malformed records skipped)")]
    NoPages { malformed: u64 },
    #[error("cannot write `{}`", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a directory name for an index", .out.display())]
    BadOut { out: PathBuf },
    #[error("`{}` exists and is not an index: refusing to replace it", .out.display())]
    OutNotIndex { out: PathBuf },
    #[error(
        "`{}` is an index that also holds {others}, which no index has: refusing to replace it and lose them; move them out, or choose another `--out`",
        .out.display()
    )]
    OutHoldsOthers { out: PathBuf, others: String },
    #[error("index `{}`", .dir.display())]
    Tantivy {
        dir: PathBuf,
        #[source]
        source: tantivy::TantivyError,
    },
    #[error(
        "--memory {memory} bytes over {threads} threads is more than the 4000 MiB a thread can use: add threads or lower --memory"
    )]
    Memory { memory: usize, threads: usize },
    #[error("an indexing thread failed")]
    Thread,
    #[error("interrupted: no index was written")]
    Interrupted,
    #[error("no index at `{}`: build one with `react-docstore index build SOURCE... --out {}`", .dir.display(), .dir.display())]
    NoIndex { dir: PathBuf },
    #[error("`{}` is not a complete index (index files but no manifest): its build was interrupted? build it again", .dir.display())]
    Incomplete { dir: PathBuf },
    #[error(
        "`{}` is not an index (no `{}` in it): give the directory `react-docstore index build SOURCE... --out DIR` wrote",
        .dir.display(), manifest::MANIFEST_FILE
    )]
    NotAnIndex { dir: PathBuf },
    #[error(
        "cannot read `{}` of index `{}`: its owner can let everyone read it with `chmod -R a+rX {}`",
        .path.display(), .dir.display(), .dir.display()
    )]
    Unreadable {
        dir: PathBuf,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("index manifest `{}` is not valid", .path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("index `{}` has format `{found}`, this version reads `{}` and `{}`: build it again", .dir.display(), manifest::INDEX_FORMAT, manifest::INDEX_FORMAT_V2)]
    Version { dir: PathBuf, found: String },
    #[error("search failed")]
    Search {
        #[source]
        source: tantivy::TantivyError,
    },
}

/// Opens one [`IndexExplorer`] per question over a shared index.
#[derive(Clone)]
pub struct IndexSource {
    index: Arc<PageIndex>,
    info: DocstoreInfo,
    profile: Profile,
}

impl IndexSource {
    /// The index built at `dir`.
    pub fn open(dir: &Path, profile: Profile) -> Result<IndexSource, IndexError> {
        let (index, _manifest) = PageIndex::open(dir)?;
        Ok(IndexSource::new(Arc::new(index), "index", profile))
    }

    /// A source over an opened index; runs record `kind` and the index's snapshot.
    pub fn new(index: Arc<PageIndex>, kind: &str, profile: Profile) -> IndexSource {
        let info = DocstoreInfo {
            kind: kind.to_owned(),
            snapshot: Some(index.snapshot().to_owned()),
        };
        IndexSource { index, info, profile }
    }

    /// The same index under another profile.
    pub fn with_profile(&self, profile: Profile) -> IndexSource {
        IndexSource {
            profile,
            ..self.clone()
        }
    }

    pub fn explorer(&self) -> IndexExplorer {
        IndexExplorer::new(self.index.clone(), self.profile)
    }
}

impl DocstoreSource for IndexSource {
    fn open(&self, _context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(self.explorer())
    }

    fn info(&self) -> DocstoreInfo {
        self.info.clone()
    }
}

/// One question's view of an offline index: the open page and the Lookup cursor, as on Wikipedia.
pub struct IndexExplorer {
    index: Arc<PageIndex>,
    reader: Reader,
}

impl IndexExplorer {
    pub fn new(index: Arc<PageIndex>, profile: Profile) -> IndexExplorer {
        IndexExplorer {
            index,
            reader: Reader::new(profile),
        }
    }

    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// `Search[entity]`, synchronously.
    pub fn search_now(&mut self, entity: &str) -> Result<String, IndexError> {
        let profile = self.reader.profile();
        let mut query = entity.to_owned();
        for depth in 0.. {
            let outcome = outcome(&self.index, &query, profile)?;
            match self.reader.show(&query, outcome, depth) {
                SearchStep::Shown(observation) => return Ok(observation),
                SearchStep::SearchAgain(again) => query = again,
            }
        }
        // invariant: `Reader::show` asks for another search only at depth 0
        unreachable!("an unbounded range ends only by returning")
    }
}

/// What a search of the index found, as the Wikipedia reader reports a search page: a page that
/// says `may refer to:` is a disambiguation page for the paper (as `wikienv.py` checks), a page
/// that is one by its first paragraph or title offers its entries in the `default` profile.
fn outcome(index: &PageIndex, query: &str, profile: Profile) -> Result<SearchOutcome, IndexError> {
    Ok(match index.search(query)? {
        SearchHit::Page(page) => match profile {
            Profile::Paper if page.says_may_refer_to() => SearchOutcome::Disambiguation {
                entries: Vec::new(),
                page: page.to_page(),
            },
            Profile::Default if page.is_disambiguation() => SearchOutcome::Disambiguation {
                entries: index.disambiguation_entries(&page)?,
                page: page.to_page(),
            },
            _ => SearchOutcome::Article(page.to_page()),
        },
        SearchHit::Similar(titles) => SearchOutcome::Results(titles),
    })
}

impl Docstore for IndexExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            // A search of a large index reads the disk: off the async workers, taking the
            // explorer's reading state along and bringing it back.
            if tokio::runtime::Handle::try_current().is_err() || self.index.pages() <= 10_000 {
                return Ok(self.search_now(entity)?);
            }
            let profile = self.reader.profile();
            let mut explorer = IndexExplorer {
                index: self.index.clone(),
                reader: std::mem::replace(&mut self.reader, Reader::new(profile)),
            };
            let entity = entity.to_owned();
            let (explorer, observation) = tokio::task::spawn_blocking(move || {
                let observation = explorer.search_now(&entity);
                (explorer, observation)
            })
            .await
            .map_err(|_| DocstoreError::Index(IndexError::Thread))?;
            self.reader = explorer.reader;
            Ok(observation?)
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        self.reader.lookup(keyword)
    }
}
