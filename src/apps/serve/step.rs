//! `ServedDocstore` and `ServedDocstore::step`: one ReAct step with no session — the reading
//! state is rebuilt from the client's [`StepState`] (the page the state names opened again, from
//! the [`RecentPages`] or by its search made again, the cursor walked forward again), the action
//! runs as the explorer `explore` uses runs it, and the new state goes back with the observation.

use std::sync::Arc;

use crate::agent::action::{Action, ActionError, ActionGrammar};
use crate::agent::environment::{Environment, EnvironmentError, Workbench};
use crate::base::profile::Profile;
use crate::docstore::{
    Docstore, DocstoreConfig, DocstoreError, DocstoreInfo, DocstoreSource, OpenedDocstore, Opener, Reader,
    WikipediaExplorer, WikipediaSource, index::IndexExplorer, index::IndexSource, index::PageIndex,
};
use crate::tools::Toolbox;

use super::pool::{IndexPool, PoolError, PoolSize};
use super::recent::RecentPages;
use super::state::{MAX_ACTION_BYTES, StateError, StepState};

/// Who opens the served docstore, as its refusals name it.
const SERVE: Opener = Opener::Command("serve");

/// How many opened pages a server remembers for the Lookups that follow: many more than the
/// episodes in flight at once.
const RECENT_PAGES: usize = 1024;
/// The text they may hold at most (a page of Wikipedia is a few KiB, a long one a few hundred).
const RECENT_PAGES_BYTES: usize = 64 * 1024 * 1024;

/// An index at most this large is searched on the async workers (a search takes microseconds);
/// a larger one on the [`IndexPool`].
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
    /// The pages steps opened last (an index's only).
    recent: RecentPages,
}

enum Served {
    Index {
        index: Arc<PageIndex>,
        source: IndexSource,
        /// The threads a large index is searched on.
        pool: IndexPool,
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
    #[error(transparent)]
    Worker(PoolError),
}

/// An action as an error message shows it: at most 200 characters.
fn cut(written: &str) -> std::borrow::Cow<'_, str> {
    crate::base::text::cut_marked(written, 200)
}

/// What one step gives back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stepped {
    pub observation: String,
    pub state: StepState,
}

impl ServedDocstore {
    /// Opens the docstore `config` names under its profile, an index searched on a pool of
    /// `pool` threads, as every command opens it ([`DocstoreConfig::open_for`]); `distractor`
    /// cannot be served (its pages come with each question).
    pub fn open(config: &DocstoreConfig, pool: PoolSize) -> Result<ServedDocstore, DocstoreError> {
        let profile = config.profile;
        let served = match config.open_for(SERVE)? {
            OpenedDocstore::Index { index, kind } => {
                let source = IndexSource::new(index.clone(), kind, profile);
                let pool = IndexPool::new(pool).map_err(|error| {
                    DocstoreError::Config(format!("cannot start the threads that search the index: {error}"))
                })?;
                Served::Index { index, source, pool }
            }
            OpenedDocstore::Wikipedia { fetcher, wiki_url } => {
                Served::Wikipedia(WikipediaSource::new(fetcher, wiki_url, profile))
            }
            // Refused by `open_for` already.
            OpenedDocstore::Distractor => {
                return Err(DocstoreError::NoQuestionParagraphs { command: "serve" });
            }
        };
        let (info, id) = match &served {
            Served::Index { source, index, .. } => (source.info(), index.snapshot().to_owned()),
            Served::Wikipedia(source) => (
                source.info(),
                format!(
                    "wikipedia {}",
                    crate::base::http::without_credentials(config.wiki_url.trim_end_matches('/'))
                ),
            ),
        };
        Ok(ServedDocstore {
            served,
            info,
            id,
            profile,
            grammar: ActionGrammar::new(profile, Vec::new()),
            recent: RecentPages::new(RECENT_PAGES, RECENT_PAGES_BYTES),
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

    /// Runs `work` over the index on the threads that search it: `None` when the docstore is no
    /// index, `Some(Err)` when their queue is full or `work` panicked.
    pub async fn on_index<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PageIndex) -> T + Send + 'static,
    ) -> Option<Result<T, PoolError>> {
        match &self.served {
            Served::Index { index, pool, .. } => {
                let index = index.clone();
                Some(pool.run(move || work(&index)).await)
            }
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
    /// and the state after it. A step that searches a large index runs on the [`IndexPool`]; a
    /// Lookup on a page opened lately reads no index and runs where it is.
    pub async fn step(self: &Arc<Self>, state: StepState, written: String) -> Result<Stepped, StepError> {
        if written.len() > MAX_ACTION_BYTES {
            return Err(StepError::TooLong { len: written.len() });
        }
        let action = self.grammar.parse(&written).map_err(|source| StepError::Action {
            written: written.clone(),
            source,
        })?;
        match &self.served {
            Served::Index { index, pool, .. }
                if index.pages() > SMALL_INDEX_PAGES && self.searches_for(&action, &state) =>
            {
                let served = self.clone();
                // The index explorer never waits on anything but the disk: its step runs to the
                // end on the pool's thread.
                pool.run(move || futures::executor::block_on(served.run(state, &written, action)))
                    .await
                    .map_err(StepError::Worker)?
            }
            _ => self.run(state, &written, action).await,
        }
    }

    /// Whether `action` from `state` searches the docstore: a Search does, a Lookup only when its
    /// page is no longer remembered.
    fn searches_for(&self, action: &Action, state: &StepState) -> bool {
        match action {
            Action::Search(_) => true,
            Action::Lookup(_) => state
                .page_search
                .as_ref()
                .is_some_and(|search| self.recent.get(search).is_none()),
            Action::Think(_) | Action::Finish(_) | Action::Tool { .. } => false,
        }
    }

    async fn run(&self, mut state: StepState, written: &str, action: Action) -> Result<Stepped, StepError> {
        let observation = match action {
            Action::Search(entity) => {
                // What a Search shows does not depend on what was open before it: it runs on a
                // fresh explorer, and the page of the state is only read back if it stays open.
                let mut explorer = self.explorer();
                let observation = explorer.search(&entity).await?;
                let reader = if explorer.reader().page().is_some() {
                    self.remember(&entity, explorer.reader());
                    state.page_search = Some(entity);
                    explorer.reader().clone()
                } else {
                    // A miss keeps the page open; the cursor goes as the profile says.
                    let mut reader = self.restore(&state).await?;
                    reader.missed();
                    reader
                };
                state.cursor = cursor_of(&reader);
                observation
            }
            Action::Lookup(keyword) => {
                let mut reader = self.restore(&state).await?;
                let observation = reader.lookup(&keyword);
                state.cursor = cursor_of(&reader);
                observation
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
                            _ => StepError::Worker(PoolError::Failed),
                        })?;
                return Ok(Stepped { observation, state });
            }
        };
        Ok(Stepped { observation, state })
    }

    fn explorer(&self) -> Explorer {
        match &self.served {
            Served::Index { source, .. } => Explorer::Index(source.explorer()),
            Served::Wikipedia(source) => Explorer::Wikipedia(source.explorer()),
        }
    }

    /// Keeps the reader `search` just opened, when the docstore is a frozen index (live pages may
    /// change between two steps: they are read again, from the page cache).
    fn remember(&self, search: &str, reader: &Reader) {
        if let Served::Index { .. } = self.served {
            self.recent.insert(search, reader.clone());
        }
    }

    /// The reader where `state` left it: the page open again (remembered, or searched again),
    /// the cursor where it was.
    async fn restore(&self, state: &StepState) -> Result<Reader, StepError> {
        let mut reader = match &state.page_search {
            None => Reader::new(self.profile),
            Some(search) => match self.recent.get(search) {
                Some(reader) => Reader::clone(&reader),
                None => {
                    let mut explorer = self.explorer();
                    explorer.search(search).await?;
                    if explorer.reader().page().is_none() {
                        return Err(
                            StateError::Stale(format!("`Search[{}]` opens no page", cut(search))).into(),
                        );
                    }
                    self.remember(search, explorer.reader());
                    explorer.reader().clone()
                }
            },
        };
        if let Some((keyword, position)) = &state.cursor {
            // Walked one match at a time, as far as the page has matches: a position past them
            // (a state from another snapshot's page, or a huge one) stops where the cursor does.
            let mut now = 0;
            while now < *position {
                reader.lookup(keyword);
                let walked = reader.cursor().map_or(0, |cursor| cursor.position);
                if walked == now {
                    break;
                }
                now = walked;
            }
            if now != *position {
                return Err(StateError::Stale(format!(
                    "the page has {now} matches of `{}`, the state has shown {position}",
                    cut(keyword)
                ))
                .into());
            }
        }
        Ok(reader)
    }
}

/// The Lookup cursor as a state carries it.
fn cursor_of(reader: &Reader) -> Option<(String, usize)> {
    reader
        .cursor()
        .map(|cursor| (cursor.keyword.clone(), cursor.position))
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

    fn reader(&self) -> &Reader {
        match self {
            Explorer::Index(explorer) => explorer.reader(),
            Explorer::Wikipedia(explorer) => explorer.reader(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docstore::DocstoreKind;

    fn served(profile: Profile) -> Arc<ServedDocstore> {
        let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/index/pages.jsonl");
        let config = DocstoreConfig {
            kind: DocstoreKind::Corpus(pages),
            ..DocstoreConfig::new(profile)
        };
        Arc::new(ServedDocstore::open(&config, PoolSize::for_this_machine()).unwrap())
    }

    async fn step(docstore: &Arc<ServedDocstore>, state: &StepState, action: &str) -> Stepped {
        docstore.step(state.clone(), action.to_owned()).await.unwrap()
    }

    #[tokio::test]
    async fn a_lookup_reads_its_page_from_memory_or_searches_again_with_the_same_answer() {
        let docstore = served(Profile::Default);
        let opened = step(&docstore, &docstore.first_state(), "Search[Special Air Service]").await;
        assert_eq!(docstore.recent.size().0, 1);
        assert!(docstore.recent.get("Special Air Service").is_some());
        let remembered = step(&docstore, &opened.state, "Lookup[regiment]").await;
        // A server that never opened the page (another replica) searches again, then remembers.
        let replica = served(Profile::Default);
        assert_eq!(replica.recent.size().0, 0);
        let searched = step(&replica, &opened.state, "Lookup[regiment]").await;
        assert_eq!(searched, remembered);
        assert!(replica.recent.get("Special Air Service").is_some());
    }

    #[tokio::test]
    async fn a_search_that_opens_no_page_leaves_the_page_open_and_the_cursor_as_the_profile_says() {
        for profile in [Profile::Default, Profile::Paper] {
            let docstore = served(profile);
            let opened = step(&docstore, &docstore.first_state(), "Search[Special Air Service]").await;
            let looked = step(&docstore, &opened.state, "Lookup[regiment]").await;
            let missed = step(&docstore, &looked.state, "Search[Xyzzyq Plughq]").await;
            assert!(
                missed.observation.starts_with("Could not find"),
                "{}",
                missed.observation
            );
            assert_eq!(docstore.recent.size().0, 1, "{profile}");
            assert_eq!(
                missed.state.page_search.as_deref(),
                Some("Special Air Service"),
                "{profile}"
            );
            let cursor = match profile {
                Profile::Paper => looked.state.cursor.clone(),
                Profile::Default => None,
            };
            assert_eq!(missed.state.cursor, cursor, "{profile}");
        }
    }
}
