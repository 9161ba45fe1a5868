//! `Batcher`: `eval --batch`'s transport. The model client hands it a request body instead of
//! sending it; the batcher gathers the bodies of every open question into one batch a round (a
//! round is submitted when every open question waits on the model), submits it through a
//! [`BatchVendor`] (OpenAI's Batch API), polls it, and hands each body its reply, the bytes a
//! synchronous request would have read. The client does everything else as it always does.
//!
//! Every batch is recorded in a [`Ledger`] beside the results file before it can be forgotten
//! (the uploaded file's id as soon as it exists, then the batch's id): an evaluation run again
//! attaches the requests whose body digest a recorded batch holds to that batch instead of
//! submitting them again, so a killed process loses nothing and pays nothing twice.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::fsutil;
use crate::base::output::counted;

/// What a ledger file says it is.
pub const LEDGER_FORMAT: &str = "react-docstore.batches.v1";
/// How long the batcher waits between two looks at a batch at first; each look without an end
/// doubles it, up to [`MAX_POLL_FACTOR`] times this.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The longest wait between two looks, as a multiple of the first.
pub const MAX_POLL_FACTOR: u32 = 16;
/// A ledger file larger than this is refused rather than read.
const MAX_LEDGER_BYTES: u64 = 256 * 1024 * 1024;

/// How `eval --batch` batches.
#[derive(Debug, Clone)]
pub struct BatchSettings {
    /// The most requests one batch holds (`--batch-size`; `None`: the vendor's most); the
    /// vendor's limits split further.
    pub size: Option<usize>,
    /// The first wait between two looks at a batch (`--batch-poll`).
    pub poll: Duration,
    /// What a request that failed inside a batch does once more.
    pub fallback: Fallback,
    /// The ledger file, beside the results file.
    pub ledger: PathBuf,
}

/// Where a request that failed inside a batch goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fallback {
    /// Into the next round's batch (up to the client's retries).
    #[default]
    NextRound,
    /// Sent synchronously at once (`--batch-fallback`), at the synchronous price.
    Synchronous,
}

/// The ledger beside a results file: `dev.results.jsonl` → `dev.results.jsonl.batches.json`.
pub fn ledger_path(results: &Path) -> PathBuf {
    let mut name = results.as_os_str().to_owned();
    name.push(".batches.json");
    PathBuf::from(name)
}

/// One request's reply from a batch: the reply's body, or why there is none.
pub type ItemResult = Result<Vec<u8>, ItemError>;

/// Why a batch gave a request no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemError {
    /// The request was answered with this status and body, as a synchronous request would be.
    Status { status: u16, body: Vec<u8> },
    /// The batch could not answer it (not submitted, failed, expired, cancelled, or the request
    /// is missing from its files): asked again.
    Batch(String),
}

/// A batch as the vendor says it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatus {
    /// The vendor's own word: `validating`, `in_progress`, `completed`, `ended`, …
    pub status: String,
    /// Whether the batch will change no more (its results can be read).
    pub ended: bool,
    pub n_done: u64,
    pub n_failed: u64,
    pub n_total: u64,
}

/// Why a call of the batch API failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct VendorError {
    pub message: String,
    /// The status and body of a refusal that asking again will not change (a bad key, no
    /// access, an unknown endpoint): every request of the batch gets it as its own answer, so
    /// the evaluation stops as it would synchronously.
    pub refused: Option<(u16, Vec<u8>)>,
}

impl VendorError {
    pub fn new(message: impl Into<String>) -> VendorError {
        VendorError {
            message: message.into(),
            refused: None,
        }
    }

    /// What each request of a batch that met this error is answered.
    fn item_error(&self) -> ItemError {
        match &self.refused {
            Some((status, body)) => ItemError::Status {
                status: *status,
                body: body.clone(),
            },
            None => ItemError::Batch(self.message.clone()),
        }
    }
}

/// One vendor's batch API: OpenAI's (files, then a batch of them), Anthropic's (the requests in
/// the batch itself).
pub trait BatchVendor: Send + Sync {
    /// `openai`, as the ledger records it.
    fn name(&self) -> &'static str;
    /// Uploads the requests when the vendor takes them as a file: its id.
    fn upload<'a>(
        &'a self,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>>;
    /// Creates the batch (of the uploaded file, or of `requests`): its id.
    fn create<'a>(
        &'a self,
        file: Option<&'a str>,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, VendorError>>;
    /// The batch already created of `recorded` (which has no id yet), if any: a process killed
    /// between creating a batch and recording its id finds it again instead of paying for a
    /// second one. `known`: the ids the ledger already records, none of which it is.
    fn find<'a>(
        &'a self,
        recorded: &'a LedgerBatch,
        known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>>;
    fn status<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>>;
    /// Asks the vendor to cancel the batch: its status after the ask.
    fn cancel<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>>;
    /// The replies of an ended batch, by custom id, read up to `limit` bytes a file.
    fn results<'a>(
        &'a self,
        batch: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<HashMap<String, ItemResult>, VendorError>>;
    /// How many bytes a line of this request adds to a batch's input.
    fn line_bytes(&self, custom_id: &str, body: &Value) -> usize;
    /// The most requests one batch holds.
    fn max_requests(&self) -> usize;
    /// The most bytes of requests (as [`BatchVendor::line_bytes`] counts them) one batch holds.
    fn max_bytes(&self) -> usize;
}

/// One request of a recorded batch: its custom id and the digest of its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRequest {
    pub custom_id: String,
    pub digest: String,
}

/// One submitted (or being submitted) batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerBatch {
    pub vendor: String,
    /// The uploaded input file, once it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_file_id: Option<String>,
    /// The batch, once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Seconds since the Unix epoch when it was recorded.
    pub submitted: u64,
    /// The vendor's last word on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The batch will change no more (its vendor said so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    /// Cancelled by `eval --batch-cancel`: its requests answered before the cancel are still
    /// collected, the others asked again in a new batch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// Of a cancelled batch that ended, the custom ids of the requests it did not answer: a later
    /// round never waits on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<Vec<String>>,
    pub requests: Vec<LedgerRequest>,
}

/// Every batch an evaluation submitted, kept in a file beside its results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pub format: String,
    pub batches: Vec<LedgerBatch>,
}

/// Why a ledger file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot read the batch ledger `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the batch ledger `{}` is not a ledger of batches: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

impl Ledger {
    /// The ids of the batches it records (a batch recorded before its vendor gave an id has
    /// none).
    fn known_ids(&self) -> Vec<String> {
        self.batches.iter().filter_map(|batch| batch.id.clone()).collect()
    }

    /// The ledger at `path`, empty when there is none yet.
    pub fn read(path: &Path) -> Result<Ledger, LedgerError> {
        use std::io::Read as _;
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Ledger {
                    format: LEDGER_FORMAT.to_owned(),
                    batches: Vec::new(),
                });
            }
            Err(source) => {
                return Err(LedgerError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let mut bytes = Vec::new();
        file.take(MAX_LEDGER_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| LedgerError::Read {
                path: path.to_owned(),
                source,
            })?;
        let invalid = |message: String| LedgerError::Invalid {
            path: path.to_owned(),
            message,
        };
        if bytes.len() as u64 > MAX_LEDGER_BYTES {
            return Err(invalid(format!("larger than {MAX_LEDGER_BYTES} bytes")));
        }
        let ledger: Ledger = serde_json::from_slice(&bytes).map_err(|error| invalid(error.to_string()))?;
        if ledger.format != LEDGER_FORMAT {
            return Err(invalid(format!(
                "its format is `{}`, not `{LEDGER_FORMAT}`",
                ledger.format
            )));
        }
        Ok(ledger)
    }

    fn write(&self, path: &Path) -> Result<(), VendorError> {
        // invariant: a ledger is plain strings and numbers, always serializable
        let bytes = serde_json::to_vec_pretty(self).expect("a ledger serializes");
        fsutil::atomic_write(path, &bytes).map_err(|error| {
            VendorError::new(format!(
                "cannot write the batch ledger `{}`: {error}",
                path.display()
            ))
        })
    }
}

/// A request waiting for the next round.
struct Queued {
    body: Value,
    digest: String,
    /// The [`noted`] run that asks it.
    asker: Option<u64>,
    reply: tokio::sync::oneshot::Sender<(ItemResult, Option<String>)>,
}

/// What the batcher knows between rounds.
struct State {
    /// Questions running now: a round starts when as many requests wait.
    open: usize,
    queued: Vec<Queued>,
    ledger: Ledger,
    /// Requests of recorded batches already handed to a request of this process.
    claimed: HashSet<(usize, String)>,
    rounds: usize,
    /// Requests of the round in batches not yet ended.
    in_flight: usize,
}

/// Writes a note where the evaluation writes its notes.
pub type NoteSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The batch transport shared by the client and the evaluation. See the module's documentation.
pub struct Batcher {
    vendor: Box<dyn BatchVendor>,
    settings: BatchSettings,
    /// The most bytes one batch's results are read up to.
    max_results_bytes: usize,
    state: Mutex<State>,
    changed: tokio::sync::Notify,
    notes: Mutex<Option<NoteSink>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("vendor", &self.vendor.name())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// One [`noted`] run: who asks (a round waits for every open question, however many requests
/// each has in flight), the batches that answered it, and what each reply a batch gave it
/// reported spending.
struct Asker {
    id: u64,
    answered_by: Mutex<Answered>,
}

/// What batches answered one [`noted`] run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The batches' ids, in the order first met; empty when no request went through a batch.
    pub batches: Vec<String>,
    /// The token usage each reply a batch gave reported, one entry a reply (`None`: it reported
    /// none): what is billed at the batch price. A request a batch failed and
    /// `--batch-fallback` asked synchronously has no entry.
    pub replies: Vec<Option<crate::llm::TokenUsage>>,
}

tokio::task_local! {
    static ASKER: Arc<Asker>;
}

/// Runs `future` (one question's run), noting what batches answered the requests sent while it
/// runs ([`Answered`]). Its requests count as one question's in a round.
pub async fn noted<F: Future>(future: F) -> (F::Output, Answered) {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let asker = Arc::new(Asker {
        id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        answered_by: Mutex::new(Answered::default()),
    });
    let output = ASKER.scope(Arc::clone(&asker), future).await;
    let answered = std::mem::take(&mut *asker.answered_by.lock().unwrap_or_else(PoisonError::into_inner));
    (output, answered)
}

/// Notes that batch `batch` answered a request of the running [`noted`] run, with the usage its
/// reply reported.
fn note_answered_by(batch: &str, tokens: Option<crate::llm::TokenUsage>) {
    let _ = ASKER.try_with(|asker| {
        let mut answered = asker.answered_by.lock().unwrap_or_else(PoisonError::into_inner);
        if !answered.batches.iter().any(|id| id == batch) {
            answered.batches.push(batch.to_owned());
        }
        answered.replies.push(tokens);
    });
}

/// Who asks the request being sent: its [`noted`] run, if any.
fn asker() -> Option<u64> {
    ASKER.try_with(|asker| asker.id).ok()
}

/// How many questions the queued requests are of (a request outside any [`noted`] run counts as
/// its own).
fn n_asking(queued: &[Queued]) -> usize {
    let askers: HashSet<u64> = queued.iter().filter_map(|queued| queued.asker).collect();
    askers.len() + queued.iter().filter(|queued| queued.asker.is_none()).count()
}

/// One batch of a round: the recorded batch's index in the ledger, and the requests of the round
/// it answers (index in the round, custom id).
struct Attached {
    ledger_idx: usize,
    requests: Vec<(usize, String)>,
}

impl Batcher {
    /// A batcher over `vendor`, resuming the batches its ledger records.
    pub fn new(
        vendor: Box<dyn BatchVendor>,
        settings: BatchSettings,
        max_response_bytes: usize,
    ) -> Result<Batcher, LedgerError> {
        let ledger = Ledger::read(&settings.ledger)?;
        Ok(Batcher {
            vendor,
            settings,
            max_results_bytes: max_response_bytes,
            state: Mutex::new(State {
                open: 0,
                queued: Vec::new(),
                ledger,
                claimed: HashSet::new(),
                rounds: 0,
                in_flight: 0,
            }),
            changed: tokio::sync::Notify::new(),
            notes: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &BatchSettings {
        &self.settings
    }

    pub fn vendor(&self) -> &'static str {
        self.vendor.name()
    }

    /// Where the batcher's notes (rounds, the vendor's status) go from now on.
    pub fn set_notes(&self, notes: NoteSink) {
        *self.notes.lock().unwrap_or_else(PoisonError::into_inner) = Some(notes);
    }

    fn note(&self, message: &str) {
        let notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner).clone();
        match notes {
            Some(notes) => notes(message),
            None => tracing::info!("{message}"),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `n` more questions run: a round waits for a request of each.
    fn open(&self, n: usize) {
        self.state().open += n;
        self.changed.notify_one();
    }

    /// A question ended: a round no longer waits for it.
    fn close(&self) {
        let mut state = self.state();
        state.open = state.open.saturating_sub(1);
        drop(state);
        self.changed.notify_one();
    }

    /// `n` questions open from now, each until its guard is dropped (its run ended, or was
    /// dropped): opened all at once, before any of them asks, so no round leaves one out.
    pub fn open_questions(self: &Arc<Batcher>, n: usize) -> Vec<OpenQuestion> {
        self.open(n);
        (0..n).map(|_| OpenQuestion(Arc::clone(self))).collect()
    }

    /// Sends `body` in the next round's batch: the reply, as a synchronous request would read it.
    /// `usage` reads what a reply reports spending (its API's usage object), noted for the run
    /// that asks ([`noted`]) as billed at the batch price.
    pub async fn send(
        &self,
        body: &Value,
        usage: impl FnOnce(&[u8]) -> Option<crate::llm::TokenUsage>,
    ) -> ItemResult {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let queued = Queued {
            body: body.clone(),
            digest: crate::base::digest::digest(&bytes),
            asker: asker(),
            reply,
        };
        self.state().queued.push(queued);
        self.changed.notify_one();
        match answer.await {
            Ok((result, batch)) => {
                // Only a reply bills at the batch price: a request the batch failed is asked
                // again, maybe synchronously at the full price (`--batch-fallback`).
                if let (Ok(reply), Some(batch)) = (&result, batch) {
                    note_answered_by(&batch, usage(reply));
                }
                result
            }
            Err(_) => Err(ItemError::Batch("the batch round was dropped".to_owned())),
        }
    }

    /// Runs the rounds for as long as it is polled: each time every open question waits on the
    /// model (a request of each is queued, counted by the [`noted`] run that asks it), the
    /// waiting requests go out as one round. Never returns.
    pub async fn drive(&self) {
        loop {
            let round = loop {
                {
                    let mut state = self.state();
                    if !state.queued.is_empty() && n_asking(&state.queued) >= state.open {
                        state.rounds += 1;
                        break std::mem::take(&mut state.queued);
                    }
                }
                self.changed.notified().await;
            };
            self.run_round(round).await;
        }
    }

    /// One round: the requests a recorded batch holds wait on it, the others go out in new
    /// batches; every batch is watched to its end and each request gets its reply.
    async fn run_round(&self, round: Vec<Queued>) {
        if let Err(error) = self.settle_cancelled().await {
            self.note(&format!("cannot read a cancelled batch's results: {error}"));
        }
        let (attached, fresh) = self.attach(&round);
        let mut batches = attached;
        let n_round = self.state().rounds;
        let mut failed_to_submit: Vec<(usize, ItemError)> = Vec::new();
        for chunk in self.chunks(&round, &fresh) {
            match self.submit(&round, &chunk).await {
                Ok(batch) => batches.push(batch),
                Err(error) => {
                    self.note(&format!("batch round {n_round}: cannot submit: {error}"));
                    failed_to_submit.extend(chunk.into_iter().map(|idx| (idx, error.item_error())));
                }
            }
        }
        let n_in_flight = batches.iter().map(|batch| batch.requests.len()).sum();
        self.state().in_flight = n_in_flight;
        self.note(&format!(
            "batch round {n_round}: {} in flight in {}",
            counted(n_in_flight, "request", "requests"),
            counted(batches.len(), "batch", "batches"),
        ));
        let mut replies: Vec<Option<(ItemResult, Option<String>)>> = round.iter().map(|_| None).collect();
        for (idx, error) in failed_to_submit {
            replies[idx] = Some((Err(error), None));
        }
        let bodies: Vec<Vec<(String, Value)>> = batches
            .iter()
            .map(|batch| {
                let requests = batch.requests.iter();
                requests
                    .map(|(idx, custom_id)| (custom_id.clone(), round[*idx].body.clone()))
                    .collect()
            })
            .collect();
        let watched = batches
            .iter()
            .zip(&bodies)
            .map(|(batch, requests)| self.collect(n_round, batch, requests));
        for (batch, results) in batches.iter().zip(futures::future::join_all(watched).await) {
            let recorded = self.state().ledger.batches[batch.ledger_idx].clone();
            let batch_id = recorded.id;
            for (idx, custom_id) in &batch.requests {
                let result = match &results {
                    Ok(results) => results.get(custom_id).cloned().unwrap_or_else(|| {
                        Err(ItemError::Batch(format!(
                            "batch `{}` ({}) holds no reply to `{custom_id}`",
                            batch_id.as_deref().unwrap_or("?"),
                            recorded.status.as_deref().unwrap_or("no status")
                        )))
                    }),
                    Err(error) => Err(error.item_error()),
                };
                replies[*idx] = Some((result, batch_id.clone()));
            }
        }
        let n_answered = replies
            .iter()
            .filter(|reply| matches!(reply, Some((Ok(_), _))))
            .count();
        self.note(&format!(
            "batch round {n_round}: {} answered, {} failed",
            n_answered,
            round.len() - n_answered
        ));
        for (queued, reply) in round.into_iter().zip(replies) {
            let reply = reply.unwrap_or_else(|| (Err(ItemError::Batch("not submitted".to_owned())), None));
            let _ = queued.reply.send(reply);
        }
    }

    /// Splits the round into the requests a recorded batch holds (by body digest, each recorded
    /// request answering one request of this process) and the fresh ones (their indices).
    fn attach(&self, round: &[Queued]) -> (Vec<Attached>, Vec<usize>) {
        let mut state = self.state();
        let vendor = self.vendor.name();
        let mut by_digest: HashMap<&str, Vec<(usize, String)>> = HashMap::new();
        for (ledger_idx, batch) in state.ledger.batches.iter().enumerate() {
            if batch.vendor != vendor {
                continue;
            }
            let lost = batch.lost.as_deref().unwrap_or_default();
            for request in &batch.requests {
                if !state.claimed.contains(&(ledger_idx, request.custom_id.clone()))
                    && !lost.contains(&request.custom_id)
                {
                    by_digest
                        .entry(&request.digest)
                        .or_default()
                        .push((ledger_idx, request.custom_id.clone()));
                }
            }
        }
        let mut attached: HashMap<usize, Vec<(usize, String)>> = HashMap::new();
        let mut fresh = Vec::new();
        let mut claims = Vec::new();
        for (idx, queued) in round.iter().enumerate() {
            match by_digest.get_mut(queued.digest.as_str()).and_then(Vec::pop) {
                Some((ledger_idx, custom_id)) => {
                    claims.push((ledger_idx, custom_id.clone()));
                    attached.entry(ledger_idx).or_default().push((idx, custom_id));
                }
                None => fresh.push(idx),
            }
        }
        state.claimed.extend(claims);
        let mut attached: Vec<Attached> = attached
            .into_iter()
            .map(|(ledger_idx, requests)| Attached { ledger_idx, requests })
            .collect();
        attached.sort_by_key(|batch| batch.ledger_idx);
        (attached, fresh)
    }

    /// The fresh requests in batches of at most `--batch-size` requests and as many requests and
    /// bytes as the vendor takes in one.
    fn chunks(&self, round: &[Queued], fresh: &[usize]) -> Vec<Vec<usize>> {
        let size = self
            .settings
            .size
            .unwrap_or(usize::MAX)
            .min(self.vendor.max_requests())
            .max(1);
        let max_bytes = self.vendor.max_bytes();
        let mut chunks: Vec<Vec<usize>> = Vec::new();
        let mut bytes = 0;
        for &idx in fresh {
            let line = self.vendor.line_bytes(&custom_id(idx), &round[idx].body);
            let full = chunks
                .last()
                .is_none_or(|chunk| chunk.len() >= size || bytes + line > max_bytes);
            if full {
                chunks.push(Vec::new());
                bytes = 0;
            }
            bytes += line;
            // invariant: a chunk was pushed above when there was none
            chunks.last_mut().expect("a chunk").push(idx);
        }
        chunks
    }

    /// Submits one new batch of the round's requests `chunk`, recording it in the ledger before
    /// each step can be forgotten: the uploaded file's id, then the batch's id.
    async fn submit(&self, round: &[Queued], chunk: &[usize]) -> Result<Attached, VendorError> {
        let requests: Vec<(String, Value)> = chunk
            .iter()
            .map(|&idx| (custom_id(idx), round[idx].body.clone()))
            .collect();
        let recorded = LedgerBatch {
            vendor: self.vendor.name().to_owned(),
            input_file_id: None,
            id: None,
            submitted: now_secs(),
            status: None,
            ended: false,
            cancelled: false,
            lost: None,
            requests: chunk
                .iter()
                .map(|&idx| LedgerRequest {
                    custom_id: custom_id(idx),
                    digest: round[idx].digest.clone(),
                })
                .collect(),
        };
        let file = self.vendor.upload(&requests).await?;
        let ledger_idx = self.record(|ledger| {
            let mut recorded = recorded;
            recorded.input_file_id = file.clone();
            ledger.batches.push(recorded);
            ledger.batches.len() - 1
        })?;
        let claims: Vec<(usize, String)> = requests
            .iter()
            .map(|(custom_id, _)| (ledger_idx, custom_id.clone()))
            .collect();
        self.state().claimed.extend(claims);
        let id = self.vendor.create(file.as_deref(), &requests).await?;
        self.record(|ledger| ledger.batches[ledger_idx].id = Some(id.clone()))?;
        Ok(Attached {
            ledger_idx,
            requests: chunk.iter().map(|&idx| (idx, custom_id(idx))).collect(),
        })
    }

    /// `eval --batch-cancel`: asks the vendor to cancel every batch of the ledger not yet ended
    /// (one a killed process created but never recorded the id of is found first), and records
    /// it cancelled. Each batch's id and the vendor's status after the ask, in the ledger's order.
    pub async fn cancel_all(&self) -> Result<Vec<(String, String)>, VendorError> {
        let (batches, known) = {
            let state = self.state();
            (state.ledger.batches.clone(), state.ledger.known_ids())
        };
        let mut cancelled = Vec::new();
        for (ledger_idx, batch) in batches.iter().enumerate() {
            if batch.vendor != self.vendor.name() || batch.ended || batch.cancelled {
                continue;
            }
            let id = match &batch.id {
                Some(id) => Some(id.clone()),
                None => self.vendor.find(batch, &known).await?,
            };
            let Some(id) = id else {
                // Never created: nothing runs, and every request of it is asked again.
                let lost = batch
                    .requests
                    .iter()
                    .map(|request| request.custom_id.clone())
                    .collect();
                self.record(|ledger| {
                    let recorded = &mut ledger.batches[ledger_idx];
                    (recorded.cancelled, recorded.ended, recorded.lost) = (true, true, Some(lost));
                })?;
                continue;
            };
            let status = match self.vendor.cancel(&id).await {
                Ok(status) => status,
                // Ended since it was last looked at: nothing to cancel.
                Err(error) => match self.vendor.status(&id).await {
                    Ok(status) if status.ended => status,
                    _ => return Err(error),
                },
            };
            self.record(|ledger| {
                let recorded = &mut ledger.batches[ledger_idx];
                recorded.id = Some(id.clone());
                recorded.status = Some(status.status.clone());
                recorded.ended = status.ended;
                recorded.cancelled = true;
            })?;
            cancelled.push((id, status.status));
        }
        Ok(cancelled)
    }

    /// Reads which requests each cancelled batch that has ended did not answer (once a batch,
    /// recorded as its `lost`), so a round asks them again instead of waiting on the batch; a
    /// cancelled batch still cancelling is waited on like any other.
    async fn settle_cancelled(&self) -> Result<(), VendorError> {
        let batches = self.state().ledger.batches.clone();
        for (ledger_idx, batch) in batches.iter().enumerate() {
            if batch.vendor != self.vendor.name() || !batch.cancelled || batch.lost.is_some() {
                continue;
            }
            let Some(id) = &batch.id else { continue };
            let status = self.vendor.status(id).await?;
            if !status.ended {
                continue;
            }
            let results = self.vendor.results(id, self.results_limit(batch)).await?;
            let lost: Vec<String> = batch
                .requests
                .iter()
                .filter(|request| !matches!(results.get(&request.custom_id), Some(Ok(_))))
                .map(|request| request.custom_id.clone())
                .collect();
            self.record(|ledger| {
                let recorded = &mut ledger.batches[ledger_idx];
                recorded.status = Some(status.status.clone());
                recorded.ended = true;
                recorded.lost = Some(lost);
            })?;
        }
        Ok(())
    }

    /// The most bytes of `batch`'s results read.
    fn results_limit(&self, batch: &LedgerBatch) -> usize {
        self.max_results_bytes
            .saturating_mul(batch.requests.len().max(1))
            .min(MAX_RESULTS_BYTES)
    }

    /// Changes the ledger and writes it whole, atomically.
    fn record<T>(&self, change: impl FnOnce(&mut Ledger) -> T) -> Result<T, VendorError> {
        let mut state = self.state();
        let output = change(&mut state.ledger);
        state.ledger.write(&self.settings.ledger)?;
        Ok(output)
    }

    /// Watches a batch to its end (creating it first, of its uploaded file or of `requests`, when a
    /// killed process recorded it but never created it) and reads its replies.
    async fn collect(
        &self,
        n_round: usize,
        batch: &Attached,
        requests: &[(String, Value)],
    ) -> Result<HashMap<String, ItemResult>, VendorError> {
        let (recorded, known) = {
            let state = self.state();
            (
                state.ledger.batches[batch.ledger_idx].clone(),
                state.ledger.known_ids(),
            )
        };
        let id = match recorded.id.clone() {
            Some(id) => id,
            None => {
                let id = match self.vendor.find(&recorded, &known).await? {
                    Some(id) => id,
                    None => {
                        let file = recorded.input_file_id.as_deref();
                        self.vendor.create(file, requests).await?
                    }
                };
                self.record(|ledger| ledger.batches[batch.ledger_idx].id = Some(id.clone()))?;
                id
            }
        };
        let mut wait = self.settings.poll;
        let mut last_status: Option<BatchStatus> = None;
        let mut n_failed_looks = 0;
        loop {
            match self.vendor.status(&id).await {
                Ok(status) => {
                    n_failed_looks = 0;
                    if last_status.as_ref() != Some(&status) {
                        if status.ended {
                            let mut state = self.state();
                            state.in_flight = state.in_flight.saturating_sub(batch.requests.len());
                        }
                        let in_flight = self.state().in_flight;
                        self.note(&format!(
                            "batch round {n_round}: {} batch {id} {}: {} of {} done, {} failed; {} in flight",
                            self.vendor.name(),
                            status.status,
                            status.n_done,
                            status.n_total,
                            status.n_failed,
                            counted(in_flight, "request", "requests"),
                        ));
                        last_status = Some(status.clone());
                        let (word, ended) = (status.status.clone(), status.ended);
                        self.record(|ledger| {
                            let recorded = &mut ledger.batches[batch.ledger_idx];
                            recorded.status = Some(word);
                            recorded.ended = ended;
                        })?;
                    }
                    if status.ended {
                        break;
                    }
                }
                // The batch runs on whatever this process meets: it is looked at again, and only
                // given up (its requests asked again) when the vendor keeps failing.
                Err(error) if error.refused.is_none() && n_failed_looks < MAX_FAILED_LOOKS => {
                    n_failed_looks += 1;
                    self.note(&format!("batch {id}: cannot look at it ({error}); looking again"));
                }
                Err(error) => return Err(error),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(self.settings.poll * MAX_POLL_FACTOR);
        }
        self.vendor.results(&id, self.results_limit(&recorded)).await
    }
}

/// Looks at a batch that may fail in a row before its requests are asked again.
const MAX_FAILED_LOOKS: usize = 10;

/// The most bytes a batch's output (or error) file is read up to.
pub const MAX_RESULTS_BYTES: usize = 1 << 30;

/// A question counted open until this is dropped.
pub struct OpenQuestion(Arc<Batcher>);

impl Drop for OpenQuestion {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A request's custom id in its batch: its place in the round.
fn custom_id(idx: usize) -> String {
    format!("request-{idx}")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}
