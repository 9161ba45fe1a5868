//! `AnthropicBatches`: Anthropic's Message Batches as a [`BatchVendor`] — the requests sent in the
//! batch itself (`POST /messages/batches`, `{requests: [{custom_id, params}]}`, each `params` the
//! body the synchronous client sends to `/messages`), looked at (`GET /messages/batches/{id}`:
//! `processing_status` `in_progress`, `canceling` or `ended`, and `request_counts`), cancelled
//! (`POST /messages/batches/{id}/cancel`) and its results read from its `results_url`, one JSON
//! line a request: `{custom_id, result: {type: succeeded|errored|canceled|expired, message|error}}`.
//! Written from Anthropic's documentation and the models of its Python SDK
//! (`anthropic.types.messages.batches`); the headers are the synchronous client's.

use std::collections::HashMap;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Body, Caller, MAX_META_BYTES};
use crate::llm::batch::{BatchStatus, BatchVendor, ItemError, ItemResult, LedgerBatch, VendorError};
use crate::llm::openai::OpenAiConfig;

/// The most requests one Message Batch holds.
const MAX_REQUESTS: usize = 100_000;
/// The largest Message Batch request: 256 MB, less room for what wraps the requests.
const MAX_BYTES: usize = 256 * 1000 * 1000 - 1024;
/// How long before a recorded batch's submission a batch found by [`BatchVendor::find`] may have
/// been created (the two clocks differ).
const CLOCK_SKEW_SECS: u64 = 300;

/// Anthropic's Message Batches at the client's base URL.
pub struct AnthropicBatches {
    caller: Caller,
}

impl AnthropicBatches {
    pub fn new(config: &OpenAiConfig) -> AnthropicBatches {
        AnthropicBatches {
            caller: Caller::new(config),
        }
    }

    async fn batch(&self, id: &str) -> Result<MessageBatch, VendorError> {
        let answer = self
            .caller
            .call(
                reqwest::Method::GET,
                &format!("messages/batches/{id}"),
                Body::None,
                MAX_META_BYTES,
            )
            .await?;
        self.caller.read("a message batch", &answer)
    }
}

/// `MessageBatch`, what this reads of it.
#[derive(Deserialize)]
struct MessageBatch {
    id: String,
    processing_status: String,
    #[serde(default)]
    request_counts: Counts,
    #[serde(default)]
    results_url: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
}

/// `MessageBatchRequestCounts`.
#[derive(Deserialize, Default)]
struct Counts {
    #[serde(default)]
    processing: u64,
    #[serde(default)]
    succeeded: u64,
    #[serde(default)]
    errored: u64,
    #[serde(default)]
    canceled: u64,
    #[serde(default)]
    expired: u64,
}

impl MessageBatch {
    fn status(&self) -> BatchStatus {
        let counts = &self.request_counts;
        BatchStatus {
            status: self.processing_status.clone(),
            ended: self.processing_status == "ended",
            n_done: counts.succeeded,
            n_failed: counts.errored + counts.canceled + counts.expired,
            n_total: counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired,
        }
    }
}

/// `GET /messages/batches`: a page of batches, the latest first.
#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    data: Vec<MessageBatch>,
}

/// `MessageBatchIndividualResponse`: one line of the results.
#[derive(Deserialize)]
struct ResultLine {
    custom_id: String,
    result: Value,
}

/// A result's reply: a succeeded request's message, the bytes `/messages` would have answered;
/// an errored one's error with the status a synchronous request would have met (so a request
/// the API refuses stops as it would, and an overloaded one is asked again); a canceled or
/// expired one is the batch's failure, asked again.
fn item_result(result: &Value) -> ItemResult {
    let kind = result.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "succeeded" => match result.get("message") {
            Some(message) => Ok(serde_json::to_vec(message).unwrap_or_default()),
            None => Err(ItemError::Batch("a succeeded result holds no message".to_owned())),
        },
        "errored" => {
            let error = result.get("error").cloned().unwrap_or(Value::Null);
            let error_type = error
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("api_error");
            Err(ItemError::Status {
                status: status_of(error_type),
                body: serde_json::to_vec(&error).unwrap_or_default(),
            })
        }
        "canceled" | "expired" => Err(ItemError::Batch(format!("the batch did not answer: {kind}"))),
        other => Err(ItemError::Batch(format!(
            "the batch answered `{other}`, not a result"
        ))),
    }
}

/// The HTTP status of an error `type` of Anthropic's API (its documented errors).
fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// One request as the batch holds it.
fn request(custom_id: &str, body: &Value) -> Value {
    json!({"custom_id": custom_id, "params": body})
}

/// `secs` since the Unix epoch as an RFC 3339 UTC time to the second, `2024-08-20T18:37:24Z`:
/// compared as text with the times the API gives (`2024-08-20T18:37:24.100435Z`).
fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let time = secs % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        time / 3600,
        time % 3600 / 60,
        time % 60
    )
}

impl BatchVendor for AnthropicBatches {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn upload<'a>(
        &'a self,
        _requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>> {
        // The requests go in the batch itself.
        Box::pin(async { Ok(None) })
    }

    fn create<'a>(
        &'a self,
        _file: Option<&'a str>,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, VendorError>> {
        Box::pin(async move {
            if requests.is_empty() {
                return Err(VendorError::new("a message batch needs its requests"));
            }
            let requests: Vec<Value> = requests
                .iter()
                .map(|(custom_id, body)| request(custom_id, body))
                .collect();
            let answer = self
                .caller
                .call(
                    reqwest::Method::POST,
                    "messages/batches",
                    Body::Json(json!({"requests": requests})),
                    MAX_META_BYTES,
                )
                .await?;
            let created: MessageBatch = self.caller.read("a created message batch", &answer)?;
            Ok(created.id)
        })
    }

    /// The latest batch the ledger does not know, created since shortly before `recorded` was,
    /// holding as many requests.
    fn find<'a>(
        &'a self,
        recorded: &'a LedgerBatch,
        known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>> {
        Box::pin(async move {
            let answer = self
                .caller
                .call(
                    reqwest::Method::GET,
                    "messages/batches?limit=100",
                    Body::None,
                    MAX_META_BYTES,
                )
                .await?;
            let listed: Listed = self.caller.read("the list of message batches", &answer)?;
            let since = rfc3339(recorded.submitted.saturating_sub(CLOCK_SKEW_SECS));
            Ok(listed
                .data
                .into_iter()
                .find(|batch| {
                    !known.contains(&batch.id)
                        && batch
                            .created_at
                            .as_deref()
                            .is_some_and(|created| *created >= *since)
                        && batch.status().n_total == recorded.requests.len() as u64
                })
                .map(|batch| batch.id))
        })
    }

    fn status<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>> {
        Box::pin(async move { Ok(self.batch(batch).await?.status()) })
    }

    fn cancel<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>> {
        Box::pin(async move {
            let answer = self
                .caller
                .call(
                    reqwest::Method::POST,
                    &format!("messages/batches/{batch}/cancel"),
                    Body::None,
                    MAX_META_BYTES,
                )
                .await?;
            let read: MessageBatch = self.caller.read("a cancelled message batch", &answer)?;
            Ok(read.status())
        })
    }

    fn results<'a>(
        &'a self,
        batch: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<HashMap<String, ItemResult>, VendorError>> {
        Box::pin(async move {
            let read = self.batch(batch).await?;
            let Some(url) = read.results_url else {
                return Err(VendorError::new(format!(
                    "message batch `{batch}` ({}) has no results yet",
                    read.processing_status
                )));
            };
            let bytes = self
                .caller
                .call(reqwest::Method::GET, &url, Body::None, limit)
                .await?;
            let mut results = HashMap::new();
            for line in bytes.split(|&byte| byte == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let line: ResultLine = self.caller.read("a message batch's result", line)?;
                results.insert(line.custom_id, item_result(&line.result));
            }
            Ok(results)
        })
    }

    fn line_bytes(&self, custom_id: &str, body: &Value) -> usize {
        request(custom_id, body).to_string().len() + 1
    }

    fn max_requests(&self) -> usize {
        MAX_REQUESTS
    }

    fn max_bytes(&self) -> usize {
        MAX_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_as_replies_statuses_or_the_batch_failure() {
        let message = json!({"id": "msg_1", "type": "message", "content": []});
        let ok = item_result(&json!({"type": "succeeded", "message": message}));
        assert_eq!(ok, Ok(message.to_string().into_bytes()));
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}});
        let refused = item_result(&json!({"type": "errored", "error": error}));
        assert_eq!(
            refused,
            Err(ItemError::Status {
                status: 400,
                body: error.to_string().into_bytes()
            })
        );
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}});
        let busy = item_result(&json!({"type": "errored", "error": overloaded}));
        assert!(
            matches!(busy, Err(ItemError::Status { status: 529, .. })),
            "{busy:?}"
        );
        for kind in ["canceled", "expired"] {
            let lost = item_result(&json!({"type": kind}));
            assert_eq!(
                lost,
                Err(ItemError::Batch(format!("the batch did not answer: {kind}")))
            );
        }
    }

    #[test]
    fn times_are_rfc_3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_724_179_044), "2024-08-20T18:37:24Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert!("2024-08-20T18:37:24.100435Z" > rfc3339(1_724_179_043).as_str());
    }
}
