//! `OpenAiBatches`: OpenAI's Batch API as a [`BatchVendor`] — the requests uploaded as a JSON Lines
//! file (`POST /files`, `purpose=batch`), a batch of it created (`POST /batches`, a 24 h window),
//! looked at (`GET /batches/{id}`) and its output and error files read (`GET /files/{id}/content`).
//! Each call is retried like a model request; everything read is bounded. [`Caller`], the calls
//! themselves, serves Anthropic's Message Batches too ([`anthropic::AnthropicBatches`]).

mod anthropic;

pub use anthropic::AnthropicBatches;

use std::collections::HashMap;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::base::http::{self, AttemptFailure, BodyError, LazyClient, RetryAfter, RetryPolicy, read_body};
use crate::base::secret::{ApiKey, RedactedMessage, Secrets};
use crate::llm::batch::{BatchStatus, BatchVendor, ItemError, ItemResult, LedgerBatch, VendorError};

use super::{Api, OpenAiConfig};

/// The largest answer about a file or a batch (not its content): a few KB.
const MAX_META_BYTES: usize = 1024 * 1024;
/// The most requests one OpenAI batch holds.
const MAX_REQUESTS: usize = 50_000;
/// The largest input file an OpenAI batch takes: 200 MB.
const MAX_FILE_BYTES: usize = 200 * 1000 * 1000;
/// How much of a server's message an error quotes.
const MAX_MESSAGE_CHARS: usize = 300;
/// The boundary between the parts of an upload: never in a JSON line (which escapes no `-` but
/// holds no line starting with two of them).
const BOUNDARY: &str = "react-docstore-batch-boundary-7c1e";

/// OpenAI's Batch API at the client's base URL.
pub struct OpenAiBatches {
    caller: Caller,
    /// `/v1/chat/completions` or `/v1/completions`.
    endpoint: &'static str,
}

/// The calls of a vendor's batch API at the client's base URL, with its key and retries.
struct Caller {
    base_url: String,
    api_key: Option<ApiKey>,
    /// Anthropic's headers (`x-api-key`, `anthropic-version`), not a bearer token.
    anthropic: bool,
    http: LazyClient,
    retry: RetryPolicy,
    secrets: Secrets,
}

impl OpenAiBatches {
    /// OpenAI's batches of the requests `config`'s API sends (`eval` hands Anthropic's API to
    /// [`AnthropicBatches`]).
    pub fn new(config: &OpenAiConfig) -> OpenAiBatches {
        OpenAiBatches {
            caller: Caller::new(config),
            endpoint: match config.api {
                Api::Chat | Api::Tools | Api::Anthropic | Api::AnthropicTools => "/v1/chat/completions",
                Api::Completions => "/v1/completions",
                Api::Responses | Api::ResponsesTools => "/v1/responses",
            },
        }
    }

    /// The batch `id` as the vendor describes it now.
    async fn batch(&self, id: &str) -> Result<Batch, VendorError> {
        let path = format!("batches/{id}");
        let answer = self
            .caller
            .call(reqwest::Method::GET, &path, Body::None, MAX_META_BYTES)
            .await?;
        self.caller.read("a batch", &answer)
    }

    /// The lines of one of a batch's files, by custom id.
    async fn file_lines(
        &self,
        file: &str,
        limit: usize,
        results: &mut HashMap<String, ItemResult>,
    ) -> Result<(), VendorError> {
        let bytes = self
            .caller
            .call(
                reqwest::Method::GET,
                &format!("files/{file}/content"),
                Body::None,
                limit,
            )
            .await?;
        for line in bytes.split(|&byte| byte == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line: OutputLine = self.caller.read("a batch's output line", line)?;
            results.insert(line.custom_id, item_result(line.response, line.error));
        }
        Ok(())
    }
}

impl Caller {
    fn new(config: &OpenAiConfig) -> Caller {
        let timeout = config.timeout;
        Caller {
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            api_key: config.api_key.clone(),
            anthropic: config.api.is_anthropic(),
            http: LazyClient::new(move || {
                reqwest::Client::builder()
                    .user_agent(concat!("react-docstore/", env!("CARGO_PKG_VERSION")))
                    .timeout(timeout.max(Duration::from_secs(300)))
                    .connect_timeout(Duration::from_secs(10))
            }),
            retry: config.retry.clone(),
            secrets: Secrets::new()
                .with_key(config.api_key.as_ref())
                .with_url_credentials(&config.base_url)
                .with_json(&Value::Object(config.options.clone())),
        }
    }

    /// `path` below the base URL; a whole URL (Anthropic's `results_url`) as it is.
    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            return path.to_owned();
        }
        format!("{}/{path}", self.base_url)
    }

    /// One call, retried: the answer's body, read up to `limit` bytes.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Body<'_>,
        limit: usize,
    ) -> Result<Vec<u8>, VendorError> {
        let url = self.url(path);
        let server = format!("batch API {}", http::server_name(&url));
        let attempt = || self.call_once(method.clone(), &url, &body, limit);
        http::retry(&server, &self.retry, attempt)
            .await
            .map_err(|gave_up| {
                let shown = http::without_credentials(&url);
                let transient = gave_up.error.is_transient();
                let (error, refused) = match gave_up.error {
                    CallError::Status { status, body, .. } => {
                        let message = super::wire::error_message(&body).unwrap_or_default();
                        let message = RedactedMessage::new(&self.secrets, &message, MAX_MESSAGE_CHARS);
                        let refused = (!transient).then(|| (status.as_u16(), body));
                        (format!("{status}: {}", message.as_str()), refused)
                    }
                    other => (other.failure(), None),
                };
                VendorError {
                    message: format!(
                        "the batch API at `{shown}` failed after {} attempts: {error}",
                        gave_up.attempts
                    ),
                    refused,
                }
            })
    }

    async fn call_once(
        &self,
        method: reqwest::Method,
        url: &str,
        body: &Body<'_>,
        limit: usize,
    ) -> Result<Vec<u8>, CallError> {
        let http = self
            .http
            .get()
            .map_err(|error| CallError::Failed(error.to_string(), false))?;
        let mut builder = http.request(method, url);
        builder = match body {
            Body::None => builder,
            Body::Json(value) => builder.json(value),
            Body::Upload(bytes) => builder
                .header(
                    reqwest::header::CONTENT_TYPE,
                    format!("multipart/form-data; boundary={BOUNDARY}"),
                )
                .body(bytes.to_vec()),
        };
        let key = self.api_key.as_ref().map(ApiKey::expose);
        if self.anthropic {
            builder = super::anthropic::headers(builder, key);
        } else if let Some(key) = key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|error| {
            let transient = error.is_timeout() || error.is_connect() || error.is_request();
            CallError::Failed(http::transport_failure(&error).to_owned(), transient)
        })?;
        let status = response.status();
        let retry_after = http::retry_after(response.headers());
        let body = read_body(response, limit).await;
        if status.is_success() {
            return body.map_err(|error| match error {
                BodyError::TooLarge => {
                    CallError::Failed(format!("an answer larger than {limit} bytes"), false)
                }
                BodyError::Cut(_) => CallError::Failed("the answer was cut short".to_owned(), true),
            });
        }
        Err(CallError::Status {
            status,
            body: body.unwrap_or_default(),
            retry_after,
        })
    }

    fn read<T: for<'de> Deserialize<'de>>(&self, what: &str, bytes: &[u8]) -> Result<T, VendorError> {
        serde_json::from_slice(bytes).map_err(|error| {
            let message = RedactedMessage::new(&self.secrets, &error.to_string(), MAX_MESSAGE_CHARS);
            VendorError::new(format!(
                "the batch API's answer about {what} does not read: {}",
                message.as_str()
            ))
        })
    }
}

/// What a call sends.
enum Body<'a> {
    None,
    Json(Value),
    Upload(&'a [u8]),
}

/// One failed call of the batch API.
#[derive(Debug)]
enum CallError {
    Status {
        status: StatusCode,
        body: Vec<u8>,
        retry_after: Option<RetryAfter>,
    },
    /// What failed, and whether asking again may help.
    Failed(String, bool),
}

impl AttemptFailure for CallError {
    fn is_transient(&self) -> bool {
        match self {
            CallError::Status { status, .. } => http::is_transient_status(*status),
            CallError::Failed(_, transient) => *transient,
        }
    }

    fn retry_after(&self) -> Option<&RetryAfter> {
        match self {
            CallError::Status { retry_after, .. } => retry_after.as_ref(),
            CallError::Failed(..) => None,
        }
    }

    fn failure(&self) -> String {
        match self {
            CallError::Status { status, .. } => format!("HTTP {status}"),
            CallError::Failed(what, _) => what.clone(),
        }
    }
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

#[derive(Deserialize)]
struct Batch {
    status: String,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    request_counts: Option<Counts>,
}

impl Batch {
    fn status(&self) -> BatchStatus {
        let counts = self.request_counts.as_ref();
        BatchStatus {
            ended: matches!(
                self.status.as_str(),
                "completed" | "failed" | "expired" | "cancelled"
            ),
            status: self.status.clone(),
            n_done: counts.map_or(0, |counts| counts.completed),
            n_failed: counts.map_or(0, |counts| counts.failed),
            n_total: counts.map_or(0, |counts| counts.total),
        }
    }
}

/// `GET /batches`: a page of batches, the latest first.
#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    data: Vec<ListedBatch>,
}

#[derive(Deserialize)]
struct ListedBatch {
    id: String,
    #[serde(default)]
    input_file_id: Option<String>,
}

#[derive(Deserialize, Default)]
struct Counts {
    #[serde(default)]
    total: u64,
    #[serde(default)]
    completed: u64,
    #[serde(default)]
    failed: u64,
}

/// A line of an output or error file.
#[derive(Deserialize)]
struct OutputLine {
    custom_id: String,
    #[serde(default)]
    response: Option<LineResponse>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LineResponse {
    status_code: u16,
    #[serde(default)]
    body: Value,
}

/// A line's reply: the body of a 2xx, else the status and body a synchronous request would have
/// read; a line with no response (expired, cancelled) is the batch's failure, asked again.
fn item_result(response: Option<LineResponse>, error: Option<Value>) -> ItemResult {
    match response {
        Some(response) if (200..300).contains(&response.status_code) => {
            Ok(serde_json::to_vec(&response.body).unwrap_or_default())
        }
        Some(response) => Err(ItemError::Status {
            status: response.status_code,
            body: serde_json::to_vec(&response.body).unwrap_or_default(),
        }),
        None => {
            let why = error
                .as_ref()
                .and_then(|error| error.get("message").or_else(|| error.get("code")))
                .and_then(Value::as_str)
                .unwrap_or("no response")
                .to_owned();
            Err(ItemError::Batch(format!("the batch did not answer: {why}")))
        }
    }
}

/// The JSON line of one request in a batch's input file.
fn request_line(endpoint: &str, custom_id: &str, body: &Value) -> String {
    json!({"custom_id": custom_id, "method": "POST", "url": endpoint, "body": body}).to_string()
}

/// The multipart body of an upload: `purpose=batch` and the file.
fn upload_body(jsonl: &str) -> Vec<u8> {
    let mut body = String::new();
    body.push_str(&format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
    ));
    body.push_str(&format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
    ));
    body.push_str(jsonl);
    body.push_str(&format!("\r\n--{BOUNDARY}--\r\n"));
    body.into_bytes()
}

impl BatchVendor for OpenAiBatches {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn upload<'a>(
        &'a self,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>> {
        Box::pin(async move {
            let jsonl: String = requests
                .iter()
                .map(|(custom_id, body)| request_line(self.endpoint, custom_id, body) + "\n")
                .collect();
            let body = upload_body(&jsonl);
            let answer = self
                .caller
                .call(
                    reqwest::Method::POST,
                    "files",
                    Body::Upload(&body),
                    MAX_META_BYTES,
                )
                .await?;
            let created: Created = self.caller.read("an uploaded file", &answer)?;
            Ok(Some(created.id))
        })
    }

    fn create<'a>(
        &'a self,
        file: Option<&'a str>,
        _requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, VendorError>> {
        Box::pin(async move {
            let file = file.ok_or_else(|| VendorError::new("an OpenAI batch needs its uploaded file"))?;
            let request =
                json!({"input_file_id": file, "endpoint": self.endpoint, "completion_window": "24h"});
            let answer = self
                .caller
                .call(
                    reqwest::Method::POST,
                    "batches",
                    Body::Json(request),
                    MAX_META_BYTES,
                )
                .await?;
            let created: Created = self.caller.read("a created batch", &answer)?;
            Ok(created.id)
        })
    }

    fn find<'a>(
        &'a self,
        recorded: &'a LedgerBatch,
        _known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>, VendorError>> {
        Box::pin(async move {
            let Some(file) = recorded.input_file_id.as_deref() else {
                return Ok(None);
            };
            // The latest batches first: one created moments before a kill is among them.
            let answer = self
                .caller
                .call(
                    reqwest::Method::GET,
                    "batches?limit=100",
                    Body::None,
                    MAX_META_BYTES,
                )
                .await?;
            let listed: Listed = self.caller.read("the list of batches", &answer)?;
            Ok(listed
                .data
                .into_iter()
                .find(|batch| batch.input_file_id.as_deref() == Some(file))
                .map(|batch| batch.id))
        })
    }

    fn status<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>> {
        Box::pin(async move { Ok(self.batch(batch).await?.status()) })
    }

    fn cancel<'a>(&'a self, batch: &'a str) -> BoxFuture<'a, Result<BatchStatus, VendorError>> {
        Box::pin(async move {
            let path = format!("batches/{batch}/cancel");
            let answer = self
                .caller
                .call(reqwest::Method::POST, &path, Body::None, MAX_META_BYTES)
                .await?;
            let read: Batch = self.caller.read("a cancelled batch", &answer)?;
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
            let mut results = HashMap::new();
            // Errors first: a request in both files is answered by its output line.
            for file in [read.error_file_id, read.output_file_id].into_iter().flatten() {
                self.file_lines(&file, limit, &mut results).await?;
            }
            Ok(results)
        })
    }

    fn line_bytes(&self, custom_id: &str, body: &Value) -> usize {
        request_line(self.endpoint, custom_id, body).len() + 1
    }

    fn max_requests(&self) -> usize {
        MAX_REQUESTS
    }

    fn max_bytes(&self) -> usize {
        MAX_FILE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_replies_statuses_or_the_batch_failure() {
        let ok = item_result(
            Some(LineResponse {
                status_code: 200,
                body: json!({"choices": []}),
            }),
            None,
        );
        assert_eq!(ok, Ok(br#"{"choices":[]}"#.to_vec()));
        let refused = item_result(
            Some(LineResponse {
                status_code: 400,
                body: json!({"error": {"message": "bad"}}),
            }),
            None,
        );
        assert!(
            matches!(refused, Err(ItemError::Status { status: 400, .. })),
            "{refused:?}"
        );
        let expired = item_result(None, Some(json!({"code": "batch_expired", "message": "expired"})));
        assert_eq!(
            expired,
            Err(ItemError::Batch("the batch did not answer: expired".to_owned()))
        );
    }

    #[test]
    fn an_upload_is_the_purpose_and_the_file() {
        let body = String::from_utf8(upload_body("{\"a\":1}\n")).unwrap();
        assert!(body.contains("name=\"purpose\"\r\n\r\nbatch\r\n"), "{body}");
        assert!(body.contains("filename=\"batch.jsonl\""), "{body}");
        assert!(
            body.ends_with(&format!("{{\"a\":1}}\n\r\n--{BOUNDARY}--\r\n")),
            "{body}"
        );
    }
}
