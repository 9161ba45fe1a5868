//! The offline Wikipedia: a frozen dump indexed once with tantivy, then searched like Wikipedia
//! with no network and no rate limit (`index build`, `--docstore index:DIR`). The same search
//! serves `corpus:FILE` and the distractor setting, from an index in memory.
//!
//! - [`title`]: MediaWiki title normalisation and title similarity (pure).
//! - [`schema`]: the fields, the tokenizer, [`IndexedPage`] and its stored form.
//! - [`formats`]: HotpotQA, KILT, FEVER, DPR and JSON Lines records → pages (pure).
//! - [`input`]: files, directories, compressed streams, tar and zip → lines.
//! - [`build`]: the parallel, crash-safe build.
//! - [`manifest`]: what an index holds; its snapshot id.
//! - [`search`]: [`PageIndex`], title matching and the ranked, typo-tolerant search.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::page::Reader;
use super::python::repr_list;
use super::{ContextParagraph, Docstore, DocstoreError, DocstoreInfo, DocstoreSource};
use crate::profile::Profile;

pub mod build;
pub mod formats;
mod input;
pub mod manifest;
pub mod schema;
pub mod search;
pub mod title;

pub use build::{BuildConfig, BuildProgress, BuildReport, MalformedRecords, build};
pub use formats::DumpFormat;
pub use manifest::{IndexInfo, Manifest, parse_size};
pub use schema::IndexedPage;
pub use search::{PageIndex, SearchHit, TitleMatch};

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
    #[error("`{}` is not a complete index (no manifest): its build was interrupted? build it again", .dir.display())]
    Incomplete { dir: PathBuf },
    #[error("index manifest `{}` is not valid", .path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("index `{}` has format `{found}`, this version reads `{}`: build it again", .dir.display(), manifest::INDEX_FORMAT)]
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

/// What a search comes to before it reaches the reader.
enum Resolution {
    Open(IndexedPage),
    Miss(String),
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
        let resolution = resolve(&self.index, entity, self.reader.profile())?;
        Ok(self.show(resolution))
    }

    fn show(&mut self, resolution: Resolution) -> String {
        match resolution {
            Resolution::Open(page) => self.reader.open(page.to_page()),
            Resolution::Miss(observation) => {
                self.reader.missed();
                observation
            }
        }
    }
}

/// Runs a search under `profile`'s rules: the paper re-searches `[entity]` once when it lands on a
/// disambiguation page; the `default` profile offers the page's entries as the Similar list.
fn resolve(index: &PageIndex, entity: &str, profile: Profile) -> Result<Resolution, IndexError> {
    let mut query = entity.to_owned();
    for depth in 0..2 {
        match index.search(&query)? {
            SearchHit::Page(page) => match profile {
                Profile::Paper if page.says_may_refer_to() && depth == 0 => query = format!("[{query}]"),
                Profile::Default if page.is_disambiguation() => {
                    // Worded as the Wikipedia docstore words a disambiguation page's entries.
                    let entries = index.disambiguation_entries(&page)?;
                    return Ok(Resolution::Miss(format!(
                        "Could not find {query}. Similar: {}.",
                        repr_list(&entries)
                    )));
                }
                _ => return Ok(Resolution::Open(page)),
            },
            SearchHit::Similar(titles) => return Ok(Resolution::Miss(miss(&query, &titles, profile))),
        }
    }
    Ok(Resolution::Miss(miss(&query, &[], profile)))
}

/// `Could not find X. Similar: [...].` in both profiles; the `default` profile says when nothing
/// is similar.
pub fn miss(entity: &str, titles: &[String], profile: Profile) -> String {
    if titles.is_empty() && profile == Profile::Default {
        format!("Could not find {entity}. No similar pages.")
    } else {
        format!("Could not find {entity}. Similar: {}.", repr_list(titles))
    }
}

impl Docstore for IndexExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            let profile = self.reader.profile();
            // A search of a large index reads the disk: off the async workers.
            let resolution = if tokio::runtime::Handle::try_current().is_ok() && self.index.pages() > 10_000 {
                let index = self.index.clone();
                let entity = entity.to_owned();
                tokio::task::spawn_blocking(move || resolve(&index, &entity, profile))
                    .await
                    .map_err(|_| DocstoreError::Index(IndexError::Thread))??
            } else {
                resolve(&self.index, entity, profile)?
            };
            Ok(self.show(resolution))
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        self.reader.lookup(keyword)
    }
}
