//! `ReplyCache`: model replies kept on disk (`--cache`), so that an evaluation run again, or a
//! method whose phases were run before, pays for no call twice.
//!
//! The cache is a directory of content-addressed files, one a reply: `{dir}/{aa}/{hex}.json`, named
//! by the SHA-256 of the request's key. The key is the API (`chat`, `completions`, `tools`), the
//! model server's `host:port` (left out with [`Hosts::Shared`]) and the whole request body as the
//! client asks it — the model, the prompt or messages, `n`, the temperature, `max_tokens`, the stop
//! sequences, the functions and every `--llm-option` — then the attempt ([`CacheScope`]: an
//! epoch's or a trial's number) and the occurrence: the k-th identical request of one attempt
//! (CoT-SC's sampling batches beyond the first, a server that ignores `n` asked sample by sample)
//! gets the k-th reply, never the first one again. The body as asked is the one before the client
//! leaves out a parameter the server refused (`stop`, `temperature`, `n`, `max_tokens` renamed):
//! a request and its retry without the refused parameter are one call, and a run that has learned
//! of the refusal names its k-th request as a run that has not, so a cache never changes which
//! reply a request gets. The API key travels in a header, never in the
//! body: it is in no key and no file, and a response that quotes it is not kept.
//!
//! Only a successful response is kept, and not when any choice was cut at `max_tokens`
//! (`finish_reason: length`, or a Responses API response's `status: incomplete`): errors and cut-off replies are asked again next time. An entry is
//! written atomically ([`atomic_write`]: a temporary sibling renamed into place), so any number of
//! processes (an evaluation's shards on one node) may share one cache: two writers of one entry
//! each write it whole, and a reader sees the old file, the new one, or none. A read is bounded
//! ([`ReplyCache::max_entry_bytes`]); an entry that is too large, not JSON, or not the entry its
//! name says is a miss, with a warning, and is written again.
//!
//! The attempt reaches the client through a [`CacheScope`]: `eval` gives each attempt at a question
//! (and `ask` its one question) a [`ScopedLlm`], whose calls carry their scope to the client as a
//! task-local; the scope numbers the calls and records which the cache answered, for the run's
//! `cache` field ([`CacheUse`]). Calls outside any scope count as attempt 1 of one process-wide
//! scope.
//!
//! `cache info|clear|prune` ([`cache_info`], [`remove_entries`]) touch only the cache's own files:
//! an entry is known by its place and its content, never by a name alone, a directory holding no
//! entry is refused naming what it holds, and other files among the entries are left and named.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use futures::future::BoxFuture;

use super::{
    Api, Completion, ConverseRequest, Generation, Llm, LlmError, LlmRequest, Reply, SampleRequest, Samples,
};
use crate::base::digest::digest;
use crate::base::fsutil::atomic_write;
use crate::base::secret::ApiKey;

/// The format of one entry, and a part of every key: a change of either starts a new cache.
pub const CACHE_FORMAT: &str = "react-docstore.reply-cache.v1";
/// The directory of the reply cache inside the page cache's (`--cache` without a directory).
pub const REPLIES_DIR: &str = "replies";

/// Whether the model server's host is part of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Hosts {
    /// A reply is served only to requests to the server that gave it (`host:port`).
    #[default]
    Separate,
    /// Servers of one model on several hosts share replies (`--cache-shared-across-hosts`).
    Shared,
}

/// The replies of one directory.
#[derive(Debug)]
pub struct ReplyCache {
    dir: PathBuf,
    hosts: Hosts,
    max_entry_bytes: usize,
    /// The scope of calls made outside any [`CacheScope`]: attempt 1.
    unscoped: Arc<CacheScope>,
}

/// Why a cache directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot create the reply cache directory `{}`", dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the reply cache directory `{}`", dir.display())]
    Read {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot remove `{}` from the reply cache", path.display())]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no reply cache at `{}`: there is no such directory", dir.display())]
    Missing { dir: PathBuf },
    #[error("no reply cache at `{}`: it is a file, not a directory", dir.display())]
    NotADirectory { dir: PathBuf },
    /// A directory that holds things and no entry: `cache` touches none of them.
    #[error(
        "`{}` is not a reply cache: it holds no reply, only {others}; nothing was touched{hint}",
        dir.display()
    )]
    NotACache {
        dir: PathBuf,
        /// What it holds, as [`named`] lists it.
        others: String,
        /// Where the replies are, when `dir` is a page cache directory.
        hint: String,
    },
}

/// One cached reply as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: String,
    /// The digest the file is named by: a file copied under another name is no hit.
    key: String,
    model: String,
    api: Api,
    attempt: u32,
    /// Seconds since the Unix epoch when it was written.
    created: u64,
    /// The server's response body, as JSON.
    response: Value,
}

/// One call's place in the cache: its key (the attempt and occurrence included) and the scope
/// that records it.
#[derive(Debug)]
pub struct CacheCall {
    scope: Arc<CacheScope>,
    /// The call's number in its scope, from 1.
    number: u64,
    attempt: u32,
    api: Api,
    key: String,
}

impl ReplyCache {
    /// The cache in `dir`, created if missing. `max_response_bytes` bounds what one entry may hold
    /// (the client's own limit on a response body): a larger file is not read.
    pub fn open(dir: &Path, hosts: Hosts, max_response_bytes: usize) -> Result<ReplyCache, CacheError> {
        std::fs::create_dir_all(dir).map_err(|source| CacheError::Create {
            dir: dir.to_owned(),
            source,
        })?;
        Ok(ReplyCache {
            dir: dir.to_owned(),
            hosts,
            max_entry_bytes: max_response_bytes.saturating_add(64 * 1024),
            unscoped: Arc::new(CacheScope::new(1)),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The largest entry file read back.
    pub fn max_entry_bytes(&self) -> usize {
        self.max_entry_bytes
    }

    /// Names the call that asks `body` of `server` (its endpoint: [`crate::base::http::endpoint`]) in
    /// the current scope: the next occurrence of that request in its attempt. `body` is the
    /// request as asked, before any parameter the server refused is left out.
    pub fn call(&self, api: Api, server: &str, body: &Value) -> CacheCall {
        let scope = current_scope().unwrap_or_else(|| Arc::clone(&self.unscoped));
        let host = (self.hosts == Hosts::Separate).then_some(server);
        let request = request_digest(api, host, body);
        let (number, occurrence) = scope.next_call(&request);
        let attempt = scope.attempt;
        let key = entry_key(&request, attempt, occurrence);
        CacheCall {
            scope,
            number,
            attempt,
            api,
            key,
        }
    }

    /// The cached response body of `call`, recorded in its scope as a hit; `None` on a miss. A
    /// corrupt entry is a miss, with a warning.
    pub fn read(&self, call: &CacheCall) -> Option<Vec<u8>> {
        let path = self.entry_path(&call.key);
        let entry = match self.read_entry(&path, &call.key) {
            Ok(Some(entry)) => entry,
            Ok(None) => return None,
            Err(problem) => {
                tracing::warn!(
                    "ignoring the reply cache entry `{}`: {problem}; asking the model again",
                    path.display()
                );
                return None;
            }
        };
        let bytes = serde_json::to_vec(&entry.response).ok()?;
        call.scope.record_hit(call.number, &entry.response);
        Some(bytes)
    }

    /// Keeps `response` as `call`'s reply, unless it should not be kept (see the module). A failed
    /// write is a warning: the reply is used all the same.
    pub fn write(&self, call: &CacheCall, model: &str, response: &[u8], api_key: Option<&ApiKey>) {
        if let Some(key) = api_key.map(ApiKey::expose).filter(|key| !key.is_empty())
            && memchr::memmem::find(response, key.as_bytes()).is_some()
        {
            tracing::debug!("the response quotes the API key: not cached");
            return;
        }
        let Ok(response) = serde_json::from_slice::<Value>(response) else {
            return;
        };
        if !is_whole_reply(&response) {
            return;
        }
        let entry = Entry {
            format: CACHE_FORMAT.to_owned(),
            key: call.key.clone(),
            model: model.to_owned(),
            api: call.api,
            attempt: call.attempt,
            created: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
            response,
        };
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return;
        };
        let path = self.entry_path(&call.key);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| atomic_write(&path, &bytes));
        if let Err(error) = written {
            tracing::warn!("cannot write the reply cache entry `{}`: {error}", path.display());
        }
    }

    /// `{dir}/{first two hex digits}/{the rest}.json`.
    fn entry_path(&self, key: &str) -> PathBuf {
        let hex = key.strip_prefix("sha256:").unwrap_or(key);
        let (fan, rest) = hex.split_at(2.min(hex.len()));
        self.dir.join(fan).join(format!("{rest}.json"))
    }

    /// The entry at `path`: `None` when there is none, an error saying what is wrong with it.
    fn read_entry(&self, path: &Path, key: &str) -> Result<Option<Entry>, String> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(format!("cannot read it ({error})")),
        };
        let entry = read_bounded_entry(file, self.max_entry_bytes)?;
        if entry.format != CACHE_FORMAT {
            return Err(format!(
                "its format is `{}`, expected `{CACHE_FORMAT}`",
                entry.format
            ));
        }
        if entry.key != key {
            return Err("it holds another request's reply".to_owned());
        }
        if !is_whole_reply(&entry.response) {
            return Err("it holds no whole reply".to_owned());
        }
        Ok(Some(entry))
    }
}

/// Reads one entry file of at most `limit` bytes.
fn read_bounded_entry(file: File, limit: usize) -> Result<Entry, String> {
    let mut bytes = Vec::new();
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    file.take(limit_u64.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot read it ({error})"))?;
    if bytes.len() > limit {
        return Err(format!("it is larger than {limit} bytes"));
    }
    serde_json::from_slice(&bytes).map_err(|error| format!("it is not a cache entry ({error})"))
}

/// Whether a response body is worth keeping: an object with at least one choice, none cut at the
/// token cap; an Anthropic message (`"type": "message"`) with content, not cut at the token cap;
/// or a Responses API response with output items, not `incomplete` (cut at the token cap, or by
/// the server).
fn is_whole_reply(response: &Value) -> bool {
    if response.get("type").and_then(Value::as_str) == Some("message") {
        return response
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|content| !content.is_empty())
            && response.get("stop_reason").and_then(Value::as_str) != Some("max_tokens");
    }
    if let Some(output) = response.get("output").and_then(Value::as_array) {
        return !output.is_empty() && response.get("status").and_then(Value::as_str) != Some("incomplete");
    }
    let Some(choices) = response.get("choices").and_then(Value::as_array) else {
        return false;
    };
    !choices.is_empty()
        && choices
            .iter()
            .all(|choice| choice.get("finish_reason").and_then(Value::as_str) != Some("length"))
}

/// The digest of what a request asks, before its attempt and occurrence.
fn request_digest(api: Api, host: Option<&str>, body: &Value) -> String {
    #[derive(Serialize)]
    struct Request<'a> {
        format: &'static str,
        api: Api,
        host: Option<&'a str>,
        body: &'a Value,
    }
    let request = Request {
        format: CACHE_FORMAT,
        api,
        host,
        body,
    };
    // invariant: a struct of strings and a JSON value always serializes
    let bytes = serde_json::to_vec(&request).expect("a request serializes");
    digest(&bytes)
}

/// The key of the `occurrence`-th request `request` of `attempt`.
fn entry_key(request: &str, attempt: u32, occurrence: u32) -> String {
    digest(format!("{request}\nattempt {attempt}\noccurrence {occurrence}").as_bytes())
}

/// One attempt at a question: the attempt's number in every key, the count of each request so
/// far, and which calls the cache answered.
#[derive(Debug)]
pub struct CacheScope {
    attempt: u32,
    state: Mutex<ScopeState>,
}

#[derive(Debug, Default)]
struct ScopeState {
    /// How often each request (by its digest) was made in this scope.
    occurrences: HashMap<String, u32>,
    /// `None` until the first call through a cache.
    cache_use: Option<CacheUse>,
}

/// What the cache did for one run (the run's `cache` field; absent when `--cache` was off).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheUse {
    /// The model calls the run made through the cache.
    pub calls: u64,
    /// Which of them the cache answered: their numbers, from 1, in the order the calls were made.
    #[serde(default)]
    pub hits: Vec<u64>,
    /// The tokens the cached replies had cost when first asked, as their responses reported.
    #[serde(default)]
    pub saved: SavedTokens,
}

/// Tokens the cache saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SavedTokens {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

impl CacheUse {
    /// Adds another run's use (for an evaluation's summary).
    pub fn add(&mut self, other: &CacheUse) {
        self.calls += other.calls;
        self.hits.extend_from_slice(&other.hits);
        self.saved.prompt_tokens += other.saved.prompt_tokens;
        self.saved.completion_tokens += other.saved.completion_tokens;
    }
}

impl CacheScope {
    /// Attempt `attempt` (an epoch's or a trial's number; 1 for a question asked once).
    pub fn new(attempt: u32) -> CacheScope {
        CacheScope {
            attempt: attempt.max(1),
            state: Mutex::new(ScopeState::default()),
        }
    }

    /// What the cache did in this scope; `None` when no call went through a cache.
    pub fn cache_use(&self) -> Option<CacheUse> {
        self.lock().cache_use.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScopeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next call's number and the occurrence of `request` it is.
    fn next_call(&self, request: &str) -> (u64, u32) {
        let mut state = self.lock();
        let cache_use = state.cache_use.get_or_insert_with(CacheUse::default);
        cache_use.calls += 1;
        let number = cache_use.calls;
        let occurrence = state.occurrences.entry(request.to_owned()).or_insert(0);
        *occurrence += 1;
        (number, *occurrence)
    }

    fn record_hit(&self, number: u64, response: &Value) {
        let tokens = |name: &str| {
            response
                .get("usage")
                .and_then(|usage| usage.get(name))
                .and_then(Value::as_u64)
        };
        // Chat Completions' words, else Anthropic's (whose input is split by the prompt cache).
        let prompt_tokens = tokens("prompt_tokens").unwrap_or_else(|| {
            [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ]
            .into_iter()
            .filter_map(tokens)
            .sum()
        });
        let completion_tokens = tokens("completion_tokens")
            .or_else(|| tokens("output_tokens"))
            .unwrap_or(0);
        let mut state = self.lock();
        let cache_use = state.cache_use.get_or_insert_with(CacheUse::default);
        cache_use.hits.push(number);
        cache_use.saved.prompt_tokens += prompt_tokens;
        cache_use.saved.completion_tokens += completion_tokens;
    }
}

tokio::task_local! {
    static SCOPE: Arc<CacheScope>;
}

/// A model whose every call is made in `scope`: what `eval` gives each attempt at a question, and
/// `ask` its question.
pub struct ScopedLlm<'a> {
    llm: &'a dyn Llm,
    scope: Arc<CacheScope>,
}

impl<'a> ScopedLlm<'a> {
    pub fn new(llm: &'a dyn Llm, scope: Arc<CacheScope>) -> ScopedLlm<'a> {
        ScopedLlm { llm, scope }
    }
}

impl Llm for ScopedLlm<'_> {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(in_scope(Arc::clone(&self.scope), self.llm.complete(request)))
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        Box::pin(in_scope(Arc::clone(&self.scope), self.llm.converse(request)))
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(in_scope(Arc::clone(&self.scope), self.llm.sample(request)))
    }

    fn model(&self) -> &str {
        self.llm.model()
    }

    fn api(&self) -> Option<Api> {
        self.llm.api()
    }

    fn generation(&self) -> Option<Generation> {
        self.llm.generation()
    }
}

/// Runs `future` with `scope` as the cache scope of every model call it makes.
pub async fn in_scope<F: Future>(scope: Arc<CacheScope>, future: F) -> F::Output {
    SCOPE.scope(scope, future).await
}

fn current_scope() -> Option<Arc<CacheScope>> {
    SCOPE.try_with(Arc::clone).ok()
}

/// A file of a cache directory larger than this is no entry: no reply the client accepts comes
/// near it (`cache info`, `clear` and `prune` read every file that may be an entry).
const MAX_ENTRY_FILE_BYTES: u64 = 64 << 20;
/// How many of the files that are no entry a message names before `…`.
const NAMED_OTHERS: usize = 8;

/// What a reply cache directory holds (`cache info`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheInfo {
    pub entries: u64,
    pub bytes: u64,
    /// Temporary files of writers: an entry being written, or left by a writer that was stopped.
    pub temporary_files: u64,
    /// Files and directories that are neither: `clear` and `prune` leave them.
    pub other_files: u64,
    /// The first of them ([`NAMED_OTHERS`]), relative to the directory (a directory with `/`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<String>,
    /// Seconds since the Unix epoch of the oldest and newest entry (by modification time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newest: Option<u64>,
}

/// What `cache clear` or `prune` removed, and what it left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub entries: u64,
    /// Temporary files of writers no longer running.
    pub temporary_files: u64,
    /// Files and directories that are no entry, left as they were; the first of them named.
    pub other_files: u64,
    pub others: Vec<String>,
}

/// A cache directory sorted into what `cache` manages — entries, and writers' temporary files —
/// and everything else, which it never touches.
#[derive(Debug, Default)]
struct Listing {
    entries: Vec<EntryFile>,
    /// The entry each temporary file was to become (its target: [`remove_stale_temporaries`]).
    ///
    /// [`remove_stale_temporaries`]: crate::base::fsutil::remove_stale_temporaries
    temporaries: Vec<PathBuf>,
    /// Everything else, relative to the directory: what is at its top first, then what is inside
    /// its fan-out directories, each part in name order.
    others: Vec<String>,
}

#[derive(Debug)]
struct EntryFile {
    path: PathBuf,
    size: u64,
    modified: SystemTime,
}

impl Listing {
    /// Sorts `dir`'s contents. An entry is recognised by its place and its content, never by a
    /// name alone: a file `{aa}/{62 hex digits}.json` in a fan-out directory named by two hex
    /// digits, holding JSON whose `format` is a reply cache's and whose `key` is the digest its
    /// path spells. A missing directory, or a file, is no cache.
    fn read(dir: &Path) -> Result<Listing, CacheError> {
        let read_error = |source| CacheError::Read {
            dir: dir.to_owned(),
            source,
        };
        match std::fs::metadata(dir) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return Err(CacheError::NotADirectory { dir: dir.to_owned() }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(CacheError::Missing { dir: dir.to_owned() });
            }
            Err(error) => return Err(read_error(error)),
        }
        let mut listing = Listing::default();
        let mut inside_fans = Vec::new();
        for (name, path, file_type) in sorted_items(dir).map_err(read_error)? {
            match name.to_str().filter(|name| file_type.is_dir() && is_fan(name)) {
                Some(fan) => {
                    let fan = fan.to_owned();
                    for (entry_name, entry_path, _) in sorted_items(&path).map_err(read_error)? {
                        listing.sort_in_fan(&fan, &entry_name, entry_path, &mut inside_fans)?;
                    }
                }
                None => listing.others.push(shown(&name, file_type)),
            }
        }
        listing.others.extend(inside_fans);
        Ok(listing)
    }

    /// Sorts one item of the fan-out directory `fan`: an entry, a temporary file or another.
    fn sort_in_fan(
        &mut self,
        fan: &str,
        name: &std::ffi::OsStr,
        path: PathBuf,
        others: &mut Vec<String>,
    ) -> Result<(), CacheError> {
        // Not followed: a link is never an entry.
        let metadata = std::fs::symlink_metadata(&path).map_err(|source| CacheError::Read {
            dir: path.clone(),
            source,
        })?;
        let text = name.to_str().unwrap_or_default();
        if metadata.is_file() {
            if entry_rest(text).is_some_and(|rest| holds_entry(&path, fan, rest, metadata.len())) {
                self.entries.push(EntryFile {
                    path,
                    size: metadata.len(),
                    modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                });
                return Ok(());
            }
            if let Some(target) = temporary_target(text) {
                self.temporaries.push(path.with_file_name(target));
                return Ok(());
            }
        }
        others.push(format!("{fan}/{}", shown(name, metadata.file_type())));
        Ok(())
    }

    /// Refuses a directory that holds things but no entry nor a writer's temporary file (an empty
    /// directory is an empty cache).
    fn refuse_unless_cache(&self, dir: &Path) -> Result<(), CacheError> {
        if !self.entries.is_empty() || !self.temporaries.is_empty() || self.others.is_empty() {
            return Ok(());
        }
        let replies = dir.join(REPLIES_DIR);
        let hint = if replies.is_dir() {
            format!(
                "; a page cache directory keeps its replies in `{REPLIES_DIR}/`: `{}`",
                replies.display()
            )
        } else {
            String::new()
        };
        Err(CacheError::NotACache {
            dir: dir.to_owned(),
            others: named(&self.others, self.others.len() as u64),
            hint,
        })
    }

    /// The first others, for a summary.
    fn first_others(&self) -> Vec<String> {
        self.others.iter().take(NAMED_OTHERS).cloned().collect()
    }
}

/// The items of `dir` in name order: name, path, type (links not followed).
fn sorted_items(dir: &Path) -> std::io::Result<Vec<(std::ffi::OsString, PathBuf, std::fs::FileType)>> {
    let mut items = Vec::new();
    for item in std::fs::read_dir(dir)? {
        let item = item?;
        items.push((item.file_name(), item.path(), item.file_type()?));
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(items)
}

/// An item's name as messages show it: a directory with a `/`.
fn shown(name: &std::ffi::OsStr, file_type: std::fs::FileType) -> String {
    let name = name.to_string_lossy();
    if file_type.is_dir() {
        format!("{name}/")
    } else {
        name.into_owned()
    }
}

/// `` `a`, `b/`, `c` `` — the first [`NAMED_OTHERS`] of `others`, then `…` when there are more
/// than `total` shown.
pub fn named(others: &[String], total: u64) -> String {
    let shown: Vec<String> = others
        .iter()
        .take(NAMED_OTHERS)
        .map(|other| format!("`{other}`"))
        .collect();
    let mut text = shown.join(", ");
    if total > shown.len() as u64 {
        text.push_str(", …");
    }
    text
}

/// Lowercase hex digits, `n` of them.
fn is_hex(text: &str, n: usize) -> bool {
    text.len() == n && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// A fan-out directory's name: the first two hex digits of its entries' keys.
fn is_fan(name: &str) -> bool {
    is_hex(name, 2)
}

/// The rest of the key an entry's file name spells (`{62 hex digits}.json`).
fn entry_rest(name: &str) -> Option<&str> {
    name.strip_suffix(".json").filter(|rest| is_hex(rest, 62))
}

/// The entry a writer's temporary file was to become: `.{entry}.tmp{pid}-{n}` gives `{entry}`.
fn temporary_target(name: &str) -> Option<&str> {
    let (target, writer) = name.strip_prefix('.')?.split_once(".tmp")?;
    let (pid, n) = writer.split_once('-')?;
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    (entry_rest(target).is_some() && digits(pid) && digits(n)).then_some(target)
}

/// Whether the file at `path` (of `size` bytes) is the entry its place names: a JSON object whose
/// `format` is a reply cache's (any version) and whose `key` is `sha256:{fan}{rest}`. The rest of
/// the file is read through, not kept.
fn holds_entry(path: &Path, fan: &str, rest: &str, size: u64) -> bool {
    #[derive(Deserialize)]
    struct Head {
        format: String,
        key: String,
    }
    if size > MAX_ENTRY_FILE_BYTES {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    let reader = std::io::BufReader::new(file.take(MAX_ENTRY_FILE_BYTES));
    let Ok(head) = serde_json::from_reader::<_, Head>(reader) else {
        return false;
    };
    let format_family = CACHE_FORMAT
        .rsplit_once('.')
        .map_or(CACHE_FORMAT, |(family, _)| family);
    head.format
        .strip_prefix(format_family)
        .is_some_and(|version| version.starts_with('.'))
        && head
            .key
            .strip_prefix("sha256:")
            .and_then(|key| key.strip_prefix(fan))
            == Some(rest)
}

/// How many entries the reply cache `dir` holds, their size and age, and what else it holds.
/// Refused: a missing directory, or one that holds no entry but other things.
pub fn cache_info(dir: &Path) -> Result<CacheInfo, CacheError> {
    let listing = Listing::read(dir)?;
    listing.refuse_unless_cache(dir)?;
    let mut info = CacheInfo {
        temporary_files: listing.temporaries.len() as u64,
        other_files: listing.others.len() as u64,
        others: listing.first_others(),
        ..CacheInfo::default()
    };
    for entry in &listing.entries {
        let modified = entry
            .modified
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        info.entries += 1;
        info.bytes += entry.size;
        info.oldest = Some(info.oldest.map_or(modified, |oldest| oldest.min(modified)));
        info.newest = Some(info.newest.map_or(modified, |newest| newest.max(modified)));
    }
    Ok(info)
}

/// Removes the entries of the reply cache `dir` written more than `older_than` ago (all of them
/// with `None`) and the temporary files of writers no longer running; a fan-out directory left
/// empty goes too. Everything else stays, and is named in what it returns. Refused, touching
/// nothing: a missing directory, or one that holds no entry but other things.
pub fn remove_entries(dir: &Path, older_than: Option<Duration>) -> Result<Removed, CacheError> {
    let listing = Listing::read(dir)?;
    listing.refuse_unless_cache(dir)?;
    let now = SystemTime::now();
    let mut removed = Removed {
        other_files: listing.others.len() as u64,
        others: listing.first_others(),
        ..Removed::default()
    };
    let mut emptied = std::collections::BTreeSet::new();
    for entry in &listing.entries {
        let old =
            older_than.is_none_or(|age| now.duration_since(entry.modified).is_ok_and(|since| since > age));
        if !old {
            continue;
        }
        match std::fs::remove_file(&entry.path) {
            Ok(()) => removed.entries += 1,
            // Another process removed it first.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(CacheError::Remove {
                    path: entry.path.clone(),
                    source,
                });
            }
        }
        emptied.extend(entry.path.parent().map(Path::to_path_buf));
    }
    let targets: std::collections::BTreeSet<&PathBuf> = listing.temporaries.iter().collect();
    for target in targets {
        removed.temporary_files += crate::base::fsutil::remove_stale_temporaries(target) as u64;
        emptied.extend(target.parent().map(Path::to_path_buf));
    }
    for fan in emptied {
        // Fails while the directory holds anything: it stays.
        let _ = std::fs::remove_dir(fan);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(text: &str) -> Vec<u8> {
        json!({
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7},
        })
        .to_string()
        .into_bytes()
    }

    fn body(prompt: &str) -> Value {
        json!({"model": "m", "messages": [{"role": "user", "content": prompt}], "temperature": 0.0})
    }

    fn open(dir: &Path) -> ReplyCache {
        ReplyCache::open(dir, Hosts::Separate, 1 << 20).unwrap()
    }

    fn text_of(bytes: &[u8]) -> String {
        let value: Value = serde_json::from_slice(bytes).unwrap();
        value["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[tokio::test]
    async fn a_kept_reply_is_served_to_the_same_request_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        let scope = Arc::new(CacheScope::new(1));
        in_scope(scope.clone(), async {
            let call = cache.call(Api::Chat, "localhost:1", &body("q"));
            assert_eq!(cache.read(&call), None);
            cache.write(&call, "m", &reply("answer"), None);
        })
        .await;
        let again = Arc::new(CacheScope::new(1));
        in_scope(again.clone(), async {
            let call = cache.call(Api::Chat, "localhost:1", &body("q"));
            assert_eq!(text_of(&cache.read(&call).unwrap()), "answer");
            for (api, server, prompt) in [
                (Api::Completions, "localhost:1", "q"),
                (Api::Chat, "localhost:2", "q"),
                (Api::Chat, "localhost:1", "other"),
            ] {
                let other = cache.call(api, server, &body(prompt));
                assert_eq!(cache.read(&other), None, "{api} {server} {prompt}");
            }
        })
        .await;
        let used = again.cache_use().unwrap();
        assert_eq!((used.calls, used.hits.clone()), (4, vec![1]));
        assert_eq!(used.saved.prompt_tokens, 100);
        assert_eq!(used.saved.completion_tokens, 7);
    }

    /// The key of a request is what it always was: a change here would make every cache miss.
    #[test]
    fn keys_are_stable() {
        let request = request_digest(Api::Chat, Some("localhost:1"), &body("q"));
        assert_eq!(
            entry_key(&request, 1, 1),
            "sha256:e7fa296178fce9aa78be225b1f76c2b6eb94e4bea8e8bef31f91813e7247ca53"
        );
    }

    #[tokio::test]
    async fn attempts_and_repeated_requests_get_replies_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        let scope = Arc::new(CacheScope::new(1));
        in_scope(scope, async {
            for text in ["first", "second"] {
                let call = cache.call(Api::Chat, "h", &body("q"));
                assert_eq!(cache.read(&call), None);
                cache.write(&call, "m", &reply(text), None);
            }
        })
        .await;
        in_scope(Arc::new(CacheScope::new(2)), async {
            let call = cache.call(Api::Chat, "h", &body("q"));
            assert_eq!(cache.read(&call), None, "epoch 2 served epoch 1's reply");
        })
        .await;
        in_scope(Arc::new(CacheScope::new(1)), async {
            let first = cache.call(Api::Chat, "h", &body("q"));
            let second = cache.call(Api::Chat, "h", &body("q"));
            assert_eq!(text_of(&cache.read(&first).unwrap()), "first");
            assert_eq!(text_of(&cache.read(&second).unwrap()), "second");
        })
        .await;
    }

    #[tokio::test]
    async fn hosts_are_shared_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let shared = ReplyCache::open(dir.path(), Hosts::Shared, 1 << 20).unwrap();
        in_scope(Arc::new(CacheScope::new(1)), async {
            let call = shared.call(Api::Chat, "node-a:8000", &body("q"));
            shared.write(&call, "m", &reply("a"), None);
        })
        .await;
        in_scope(Arc::new(CacheScope::new(1)), async {
            let call = shared.call(Api::Chat, "node-b:8000", &body("q"));
            assert_eq!(text_of(&shared.read(&call).unwrap()), "a");
        })
        .await;
    }

    #[test]
    fn cut_off_replies_errors_and_replies_quoting_the_key_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        let key = ApiKey::new("sk-secret-cache-key");
        let cut = json!({"choices": [{"text": "a", "finish_reason": "stop"}, {"text": "b", "finish_reason": "length"}]});
        let quoting = json!({"choices": [{"text": "sk-secret-cache-key", "finish_reason": "stop"}]});
        for (n, response) in [
            cut.to_string().into_bytes(),
            b"{\"error\": {\"message\": \"bad\"}}".to_vec(),
            b"{\"choices\": []}".to_vec(),
            b"not json".to_vec(),
            quoting.to_string().into_bytes(),
            // The Responses API: cut at the token cap, or with no output.
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                   "output": [{"type": "reasoning", "summary": []}]})
            .to_string()
            .into_bytes(),
            b"{\"status\": \"completed\", \"output\": []}".to_vec(),
        ]
        .iter()
        .enumerate()
        {
            let call = cache.call(Api::Completions, "h", &json!({"prompt": n}));
            cache.write(&call, "m", response, Some(&key));
            assert_eq!(cache.read(&call), None, "response {n} was kept");
        }
        assert_eq!(cache_info(dir.path()).unwrap().entries, 0);
        let whole = json!({"status": "completed", "output": [{"type": "message", "content": []}],
                           "usage": {"input_tokens": 7, "output_tokens": 3}});
        let call = cache.call(Api::Responses, "h", &json!({"input": "q"}));
        cache.write(&call, "m", whole.to_string().as_bytes(), Some(&key));
        assert!(cache.read(&call).is_some(), "a whole Responses reply is kept");
    }

    /// Anthropic's messages are kept as whole replies unless cut at `max_tokens`, and a hit
    /// saves their tokens: every input token (those read from and written to Anthropic's own
    /// cache too) and the output's.
    #[tokio::test]
    async fn anthropic_messages_are_kept_unless_cut() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        let message = |stop_reason: &str| {
            json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "a"}],
                "stop_reason": stop_reason, "usage": {"input_tokens": 3, "cache_read_input_tokens": 90,
                "cache_creation_input_tokens": 7, "output_tokens": 5}})
            .to_string()
            .into_bytes()
        };
        let scope = Arc::new(CacheScope::new(1));
        in_scope(Arc::clone(&scope), async {
            for (n, stop_reason, kept) in [(0, "max_tokens", false), (1, "end_turn", true)] {
                let call = cache.call(Api::Anthropic, "h", &json!({"prompt": n}));
                cache.write(&call, "m", &message(stop_reason), None);
                assert_eq!(cache.read(&call).is_some(), kept, "{stop_reason}");
            }
        })
        .await;
        let saved = scope.lock().cache_use.clone().unwrap().saved;
        assert_eq!((saved.prompt_tokens, saved.completion_tokens), (100, 5));
    }

    #[test]
    fn corrupt_entries_are_misses_and_are_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ReplyCache::open(dir.path(), Hosts::Separate, 1024).unwrap();
        let call = cache.call(Api::Chat, "h", &body("q"));
        let path = cache.entry_path(&call.key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let other_call = cache.call(Api::Chat, "h", &body("other"));
        cache.write(&other_call, "m", &reply("other"), None);
        let misplaced = std::fs::read(cache.entry_path(&other_call.key)).unwrap();
        for corrupt in [
            b"{\"format\": \"react-docstore.reply-cache.v1\", \"key\"".to_vec(),
            vec![0xff; 10],
            vec![b' '; 4096],
            misplaced,
        ] {
            std::fs::write(&path, &corrupt).unwrap();
            assert_eq!(cache.read(&call), None);
        }
        cache.write(&call, "m", &reply("fresh"), None);
        assert_eq!(text_of(&cache.read(&call).unwrap()), "fresh");
    }

    #[test]
    fn info_counts_entries_and_prune_removes_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        for prompt in ["a", "b", "c"] {
            let call = cache.call(Api::Chat, "h", &body(prompt));
            cache.write(&call, "m", &reply(prompt), None);
        }
        let info = cache_info(dir.path()).unwrap();
        assert_eq!(info.entries, 3);
        assert!(info.bytes > 0 && info.oldest.is_some());
        let kept = remove_entries(dir.path(), Some(Duration::from_secs(3600))).unwrap();
        assert_eq!(kept, Removed::default());
        assert_eq!(remove_entries(dir.path(), None).unwrap().entries, 3);
        assert_eq!(cache_info(dir.path()).unwrap(), CacheInfo::default());
        assert!(matches!(
            cache_info(&dir.path().join("missing")),
            Err(CacheError::Missing { .. })
        ));
    }

    #[test]
    fn entries_are_known_by_their_place_and_content_and_nothing_else_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path());
        let call = cache.call(Api::Chat, "h", &body("q"));
        cache.write(&call, "m", &reply("a"), None);
        let entry = cache.entry_path(&call.key);
        let entry_bytes = std::fs::read(&entry).unwrap();
        let fan = entry.parent().unwrap().to_owned();
        let rest = entry.file_stem().unwrap().to_str().unwrap().to_owned();
        // A writer that was stopped left its temporary file; a writer still running owns its own.
        let mut stopped = std::process::Command::new("true").spawn().unwrap();
        let stopped_pid = stopped.id();
        stopped.wait().unwrap();
        let stale = fan.join(format!(".{rest}.json.tmp{stopped_pid}-0"));
        let live = fan.join(format!(".{rest}.json.tmp{}-9", std::process::id()));
        let foreign = [
            // An entry's bytes under a name its key does not spell, and under another extension.
            (fan.join(format!("{}.json", "0".repeat(62))), entry_bytes.clone()),
            (fan.join(format!("{rest}.txt")), entry_bytes.clone()),
            // An entry's name, other content.
            (
                dir.path().join("ab").join(format!("{}.json", "1".repeat(62))),
                b"{\"mine\": 1}".to_vec(),
            ),
            (dir.path().join("notes.txt"), b"mine".to_vec()),
            (dir.path().join("runs").join("run1.json"), b"{}".to_vec()),
            (live.clone(), b"{\"format\"".to_vec()),
        ];
        for (path, bytes) in &foreign {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        std::fs::write(&stale, b"{\"for").unwrap();
        let info = cache_info(dir.path()).unwrap();
        assert_eq!((info.entries, info.temporary_files, info.other_files), (1, 2, 5));
        assert_eq!(info.others[..2], ["notes.txt".to_owned(), "runs/".to_owned()]);
        let removed = remove_entries(dir.path(), None).unwrap();
        assert_eq!(
            (removed.entries, removed.temporary_files, removed.other_files),
            (1, 1, 5)
        );
        assert!(!entry.exists() && !stale.exists());
        for (path, bytes) in &foreign {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
        }

        // Without a single entry, what the directory holds is named and nothing is touched.
        std::fs::remove_file(&live).unwrap();
        for refused in [
            remove_entries(dir.path(), None).map(drop),
            cache_info(dir.path()).map(drop),
        ] {
            let message = refused.unwrap_err().to_string();
            assert!(
                message.contains("is not a reply cache: it holds no reply, only `notes.txt`, `runs/`, `"),
                "{message}"
            );
            assert!(
                message.contains(&format!("`ab/{}.json`", "1".repeat(62))),
                "{message}"
            );
        }
        for (path, bytes) in &foreign[..5] {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
        }
        let file = dir.path().join("notes.txt");
        assert!(matches!(cache_info(&file), Err(CacheError::NotADirectory { .. })));
    }
}
