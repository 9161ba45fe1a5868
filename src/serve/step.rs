//! `ServedDocstore` and `ServedDocstore::step`: one ReAct step with no session — the explorer is
//! rebuilt from the client's [`StepState`] (the search that opened the page is made again, the
//! cursor walked forward again), the action runs through the same explorer `explore` uses, and the
//! new state goes back with the observation.

use std::sync::Arc;

use crate::action::{Action, ActionError, ActionGrammar};
use crate::docstore::corpus::load_pages;
use crate::docstore::{
    Docstore, DocstoreConfig, DocstoreError, DocstoreInfo, DocstoreKind, DocstoreSource, Fetcher,
    IndexExplorer, IndexSource, PageIndex, Reader, WikipediaExplorer, WikipediaSource,
};
use crate::environment::{Environment, EnvironmentError, Workbench};
use crate::profile::Profile;
use crate::tool::Toolbox;

use super::state::{MAX_ACTION_BYTES, StateError, StepState};

/// An index at most this large is searched on the async workers (a search takes microseconds);
/// a larger one on the blocking pool, as `IndexExplorer` does.
const SMALL_INDEX_PAGES: u64 = 10_000;

/// The docstore behind `serve`: an index (a dump's, or a corpus file's in memory), which also
/// answers the ranked retrievals, or live Wikipedia through the shared page cache and client.
pub struct ServedDocstore {
    served: Served,
    info: DocstoreInfo,
    /// What a state names its docstore by: the snapshot, or `wikipedia URL`.
    id: String,
    profile: Profile,
    grammar: ActionGrammar,
}

enum Served {
    Index {
        index: Arc<PageIndex>,
        source: IndexSource,
    },
    Wikipedia(WikipediaSource),
}

/// Why a step was refused (a 400) or failed (a 502).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("action `{}`: {source}", cut(.written))]
    Action {
        written: String,
        #[source]
        source: ActionError,
    },
    #[error("action is {len} bytes, more than the {MAX_ACTION_BYTES} an action can be")]
    TooLong { len: usize },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Docstore(#[from] DocstoreError),
    #[error("the step's worker failed")]
    Worker,
}

/// An action as an error message shows it: at most 200 characters.
fn cut(written: &str) -> std::borrow::Cow<'_, str> {
    crate::docstore::page::cut_marked(written, 200)
}

/// What one step gives back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stepped {
    pub observation: String,
    pub state: StepState,
}

impl ServedDocstore {
    /// Opens the docstore `config` names under its profile; `distractor` cannot be served (its
    /// pages come with each question).
    pub fn open(config: &DocstoreConfig) -> Result<ServedDocstore, DocstoreError> {
        let profile = config.profile;
        let indexed = |index: PageIndex, kind: &str| {
            let index = Arc::new(index);
            let source = IndexSource::new(index.clone(), kind, profile);
            Served::Index { index, source }
        };
        let served = match &config.kind {
            DocstoreKind::Index(dir) => indexed(PageIndex::open(dir)?.0, "index"),
            DocstoreKind::Corpus(path) => {
                indexed(PageIndex::in_memory(load_pages(path)?, "corpus")?, "corpus")
            }
            DocstoreKind::Wikipedia => {
                // Checks the URL as every command does (no request is made).
                config.open()?;
                let wiki_url = config.wiki_url.trim_end_matches('/').to_owned();
                Served::Wikipedia(WikipediaSource::new(Fetcher::new(config), wiki_url, profile))
            }
            DocstoreKind::Distractor => {
                return Err(DocstoreError::Config(
                    "`--docstore distractor` searches each question's own paragraphs, which a server does not have: serve `wikipedia`, `corpus:FILE` or `index:DIR`".to_owned(),
                ));
            }
        };
        let (info, id) = match &served {
            Served::Index { source, index } => (source.info(), index.snapshot().to_owned()),
            Served::Wikipedia(source) => (
                source.info(),
                format!("wikipedia {}", config.wiki_url.trim_end_matches('/')),
            ),
        };
        Ok(ServedDocstore {
            served,
            info,
            id,
            profile,
            grammar: ActionGrammar::new(profile, Vec::new()),
        })
    }

    /// Which docstore answers, with its snapshot.
    pub fn info(&self) -> &DocstoreInfo {
        &self.info
    }

    /// What states name this docstore by.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The index, when the docstore is one (the ranked retrievals need it).
    pub fn index(&self) -> Option<&Arc<PageIndex>> {
        match &self.served {
            Served::Index { index, .. } => Some(index),
            Served::Wikipedia(_) => None,
        }
    }

    /// A fresh state: no page open, no cursor.
    pub fn first_state(&self) -> StepState {
        StepState {
            docstore: self.id.clone(),
            profile: self.profile,
            page_search: None,
            cursor: None,
        }
    }

    /// Runs `written` from `state`: the observation `explore` would print after the same actions,
    /// and the state after it. An index's step runs on the blocking pool when the index is large.
    pub async fn step(self: &Arc<Self>, state: StepState, written: String) -> Result<Stepped, StepError> {
        if written.len() > MAX_ACTION_BYTES {
            return Err(StepError::TooLong { len: written.len() });
        }
        let action = self.grammar.parse(&written).map_err(|source| StepError::Action {
            written: written.clone(),
            source,
        })?;
        match &self.served {
            Served::Index { index, .. } if index.pages() > SMALL_INDEX_PAGES => {
                let served = self.clone();
                // The index explorer never waits on anything but the disk: its step runs to the
                // end on this blocking thread.
                tokio::task::spawn_blocking(move || {
                    futures::executor::block_on(served.run(state, &written, action))
                })
                .await
                .map_err(|_| StepError::Worker)?
            }
            _ => self.run(state, &written, action).await,
        }
    }

    async fn run(&self, mut state: StepState, written: &str, action: Action) -> Result<Stepped, StepError> {
        let mut explorer = self.explorer();
        let observation = match action {
            Action::Search(entity) => {
                self.restore(&mut explorer, &state).await?;
                let before = explorer.reader().page().cloned();
                let observation = explorer.search(&entity).await?;
                if explorer.reader().page() != before.as_ref() {
                    state.page_search = Some(entity);
                }
                observation
            }
            Action::Lookup(keyword) => {
                self.restore(&mut explorer, &state).await?;
                explorer.lookup(&keyword)
            }
            other @ (Action::Think(_) | Action::Finish(_) | Action::Tool { .. }) => {
                // What `explore` answers to an action that reads no page; the state stays as it was.
                let fresh = match &self.served {
                    Served::Index { source, .. } => source.open(&[]),
                    Served::Wikipedia(source) => source.open(&[]),
                };
                let mut workbench = Workbench::new(fresh, Toolbox::default(), self.grammar.clone());
                let observation =
                    workbench
                        .observe(1, &Ok(other), written)
                        .await
                        .map_err(|error| match error {
                            EnvironmentError::Docstore(error) => StepError::Docstore(error),
                            _ => StepError::Worker,
                        })?;
                return Ok(Stepped { observation, state });
            }
        };
        state.cursor = explorer
            .reader()
            .cursor()
            .map(|cursor| (cursor.keyword.clone(), cursor.position));
        Ok(Stepped { observation, state })
    }

    fn explorer(&self) -> Explorer {
        match &self.served {
            Served::Index { source, .. } => Explorer::Index(source.explorer()),
            Served::Wikipedia(source) => Explorer::Wikipedia(source.explorer()),
        }
    }

    /// Puts `explorer` where `state` says: the page open again, the cursor where it was.
    async fn restore(&self, explorer: &mut Explorer, state: &StepState) -> Result<(), StepError> {
        if let Some(search) = &state.page_search {
            explorer.search(search).await?;
            if explorer.reader().page().is_none() {
                return Err(StateError::Stale(format!("`Search[{}]` opens no page", cut(search))).into());
            }
        }
        if let Some((keyword, position)) = &state.cursor {
            for _ in 0..*position {
                explorer.lookup(keyword);
            }
            let now = explorer.reader().cursor().map_or(0, |cursor| cursor.position);
            if now != *position {
                return Err(StateError::Stale(format!(
                    "the page has {now} matches of `{}`, the state has shown {position}",
                    cut(keyword)
                ))
                .into());
            }
        }
        Ok(())
    }
}

/// The two explorers a server runs, with their reading state in view.
enum Explorer {
    Index(IndexExplorer),
    Wikipedia(WikipediaExplorer),
}

impl Explorer {
    async fn search(&mut self, entity: &str) -> Result<String, DocstoreError> {
        match self {
            Explorer::Index(explorer) => Ok(explorer.search_now(entity)?),
            Explorer::Wikipedia(explorer) => explorer.search(entity).await,
        }
    }

    fn lookup(&mut self, keyword: &str) -> String {
        match self {
            Explorer::Index(explorer) => explorer.lookup(keyword),
            Explorer::Wikipedia(explorer) => explorer.lookup(keyword),
        }
    }

    fn reader(&self) -> &Reader {
        match self {
            Explorer::Index(explorer) => explorer.reader(),
            Explorer::Wikipedia(explorer) => explorer.reader(),
        }
    }
}
