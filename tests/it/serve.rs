//! `serve`: the docstore over HTTP on a loopback port, offline, over fixture corpora — the step
//! state's round trip against `explore`, the retrieval shapes DSPy's and Search-R1's clients
//! parse, and what hostile clients get (400s that say what, 413, timeouts, bounded connections,
//! a graceful stop on SIGTERM).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use react_docstore::apps::explore::Explore;
use react_docstore::apps::serve::{self, PoolSize, ServeLimits, Served, ServedDocstore, Shutdown, StateKey};
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{DocstoreConfig, DocstoreKind};
use react_docstore::tools::Toolbox;

use crate::fixture;

/// The 60 pages of the index fixtures, as a corpus file.
fn pages() -> DocstoreKind {
    DocstoreKind::Corpus(fixture("index/pages.jsonl"))
}

fn key() -> StateKey {
    StateKey::new(b"a test key of the serve tests, 32+").unwrap()
}

/// A server on a free loopback port, stopped (and drained) when dropped.
struct TestServer {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<Shutdown>>>,
}

impl TestServer {
    async fn start(kind: DocstoreKind, profile: Profile, key: StateKey, limits: ServeLimits) -> TestServer {
        TestServer::serving(opened(kind, profile, PoolSize::for_this_machine()), key, limits).await
    }

    /// A server of `docstore`.
    async fn serving(docstore: Arc<ServedDocstore>, key: StateKey, limits: ServeLimits) -> TestServer {
        let served = Arc::new(Served { docstore, key });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let router = serve::router(served, &limits);
        let task = tokio::spawn(async move {
            serve::serve(listener, router, &limits, async {
                let _ = stopped.await;
            })
            .await
        });
        TestServer {
            url,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn default() -> TestServer {
        TestServer::start(pages(), Profile::Default, key(), ServeLimits::default()).await
    }

    fn address(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = crate::http_client()
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON answer"))
    }

    async fn get(&self, path_and_query: &str) -> (u16, Value) {
        let response = crate::http_client()
            .get(format!("{}{path_and_query}", self.url))
            .send()
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON answer"))
    }

    /// Sends `actions` through `/v1/step`, each with the state the last one gave back.
    async fn steps(&self, actions: &[&str]) -> Vec<String> {
        let mut state = Value::Null;
        let mut observations = Vec::new();
        for action in actions {
            let (status, answer) = self
                .post("/v1/step", json!({"action": action, "state": state}))
                .await;
            assert_eq!(status, 200, "{action}: {answer}");
            observations.push(answer["observation"].as_str().unwrap().to_owned());
            state = answer["state"].clone();
        }
        observations
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            assert_eq!(task.await.unwrap().unwrap(), Shutdown::Drained);
        }
    }
}

/// The docstore `kind` served under `profile`, searched on a pool of `pool`.
fn opened(kind: DocstoreKind, profile: Profile, pool: PoolSize) -> Arc<ServedDocstore> {
    let config = DocstoreConfig {
        kind,
        ..DocstoreConfig::new(profile)
    };
    Arc::new(ServedDocstore::open(&config, pool).expect("the docstore opens"))
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The observations `explore` prints for `actions` over the same docstore and profile.
async fn explored(kind: DocstoreKind, profile: Profile, actions: &[&str]) -> Vec<String> {
    let config = DocstoreConfig {
        kind,
        ..DocstoreConfig::new(profile)
    };
    let source = config.open().unwrap();
    let mut explore = Explore::new(source.as_ref(), Toolbox::default(), profile);
    let mut observations = Vec::new();
    for action in actions {
        observations.push(explore.run(action).await.unwrap().observation);
    }
    observations
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_give_exactly_the_observations_of_explore_in_both_profiles() {
    // A page opened, its cursor walked past the end, a miss (the paper keeps the cursor, the
    // default profile starts it afresh), another page, then actions that read no page.
    let actions = [
        "Search[Special Air Service]",
        "Lookup[regiment]",
        "Lookup[regiment]",
        "Search[special unit]",
        "Lookup[regiment]",
        "Lookup[regiment]",
        "Search[Giretsu Kuteitai]",
        "Lookup[the]",
        "Lookup[The]",
        "Lookup[the]",
        "Search[Grand Ole Opry]",
        "Lookup[Nashville]",
        "Lookup[Nashville]",
        "Finish[Nashville]",
        "Lookup[Nashville]",
    ];
    for profile in [Profile::Default, Profile::Paper] {
        let server = TestServer::start(pages(), profile, key(), ServeLimits::default()).await;
        let expected = explored(pages(), profile, &actions).await;
        assert_eq!(server.steps(&actions).await, expected, "{profile}");
        // The cursor really moved: the same Lookup answers differently the second time.
        assert_ne!(expected[1], expected[2], "{profile}");
        server.stop().await;
    }
    // The paper's own actions: `think[...]` and the lower-case names.
    let paper = [
        "search[Special Air Service]",
        "think[SAS is British]",
        "lookup[corps]",
    ];
    let server = TestServer::start(pages(), Profile::Paper, key(), ServeLimits::default()).await;
    assert_eq!(
        server.steps(&paper).await,
        explored(pages(), Profile::Paper, &paper).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_replica_with_the_key_continues_a_state_and_nothing_else_does() {
    let first = TestServer::default().await;
    let replica = TestServer::default().await;
    let (_, opened) = first
        .post(
            "/v1/step",
            json!({"action": "Search[Special Air Service]", "state": null}),
        )
        .await;
    let state = opened["state"].as_str().unwrap().to_owned();
    let (status, looked) = replica
        .post("/v1/step", json!({"action": "Lookup[regiment]", "state": state}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        looked["observation"],
        "(Result 1 / 1) The SAS was founded in 1941 as a regiment, and later reconstituted as a corps in 1950."
    );

    let refused = |answer: &Value, start: &str| {
        let message = answer["error"].as_str().unwrap_or_default().to_owned();
        assert!(message.starts_with(start), "{message}");
    };
    // Another key.
    let other_key = TestServer::start(
        pages(),
        Profile::Default,
        StateKey::new(b"another key for another deployment").unwrap(),
        ServeLimits::default(),
    )
    .await;
    let (status, answer) = other_key
        .post("/v1/step", json!({"action": "Lookup[regiment]", "state": state}))
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state was not issued by this server, or was changed");
    // Another snapshot, same key.
    let other_corpus = TestServer::start(
        DocstoreKind::Corpus(fixture("docstore/corpus-3.jsonl")),
        Profile::Default,
        key(),
        ServeLimits::default(),
    )
    .await;
    let (status, answer) = other_corpus
        .post("/v1/step", json!({"action": "Lookup[regiment]", "state": state}))
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state was made for docstore `corpus-");
    // Another profile, same key and corpus.
    let paper = TestServer::start(pages(), Profile::Paper, key(), ServeLimits::default()).await;
    let (status, answer) = paper
        .post("/v1/step", json!({"action": "Lookup[regiment]", "state": state}))
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state was made for the `default` profile");
    // Tampered: the page search named in the state changed, the signature kept.
    let (data, signature) = state.split_once('.').unwrap();
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let json = String::from_utf8(engine.decode(data).unwrap()).unwrap();
    assert!(json.contains("Special Air Service"), "{json}");
    let tampered = format!(
        "{}.{signature}",
        engine.encode(json.replace("Special Air Service", "Grand Ole Opry"))
    );
    let (status, answer) = first
        .post(
            "/v1/step",
            json!({"action": "Lookup[regiment]", "state": tampered}),
        )
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state was not issued by this server, or was changed");
    // Not a state at all, and too large.
    let (status, answer) = first
        .post(
            "/v1/step",
            json!({"action": "Lookup[regiment]", "state": "hello"}),
        )
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state is not one this server issued");
    let (status, answer) = first
        .post(
            "/v1/step",
            json!({"action": "Lookup[regiment]", "state": "a".repeat(20_000)}),
        )
        .await;
    assert_eq!(status, 400);
    refused(&answer, "state is 20000 bytes, more than the 16384");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_400s_that_say_what_was_wrong() {
    let server = TestServer::default().await;
    let client = crate::http_client();
    let raw = |body: &'static str| {
        client
            .post(format!("{}/v1/step", server.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: [(&str, &str); 4] = [
        (
            "{\"action\": ",
            "invalid JSON body: EOF while parsing a value at line 1 column 11",
        ),
        (
            "{\"state\": null}",
            "invalid JSON body: missing field `action` at line 1 column 15",
        ),
        (
            "\"Search[x]\"",
            "invalid JSON body: invalid type: string \"Search[x]\", expected struct StepRequest",
        ),
        (
            "{\"action\": \"Fetch[Paris]\"}",
            "action `Fetch[Paris]`: unknown action `Fetch`, expected one of Search[...], Lookup[...], Finish[...]",
        ),
    ];
    for (body, message) in cases {
        let response = raw(body).await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let answer: Value = response.json().await.unwrap();
        let error = answer["error"].as_str().unwrap();
        assert!(error.starts_with(message), "{body}: {error}");
    }
    let (status, answer) = server
        .post(
            "/v1/step",
            json!({"action": format!("Search[{}]", "x".repeat(5000))}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["error"],
        "action is 5008 bytes, more than the 4096 an action can be"
    );
    let (status, answer) = server.get("/api/search?k=3").await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["error"],
        "missing `query`: GET /api/search?query=...&k=..."
    );
    let (status, answer) = server.get("/api/search?query=x&k=many").await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"], "`k` must be a whole number, found `many`");
    let (status, answer) = server
        .post("/retrieve", json!({"queries": ["x"], "topk": 0}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"], "`topk` must be at least 1");
    let (status, answer) = server.get("/v2/step").await;
    assert_eq!(status, 404);
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("no endpoint `GET /v2/step`")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_one_mebibyte_is_a_413() {
    let server = TestServer::default().await;
    let big = json!({"action": "Search[x]", "state": "a".repeat(1024 * 1024)});
    let response = crate::http_client()
        .post(format!("{}/v1/step", server.url))
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    // Without a length announced (chunked): cut at the limit all the same.
    let mut stream = TcpStream::connect(server.address()).await.unwrap();
    stream
        .write_all(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
    for _ in 0..20 {
        // The server may answer and close before the last chunks: a failed write is expected.
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let mut answer = vec![0u8; 12];
    stream.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 413");
    // The server goes on serving.
    assert_eq!(server.get("/health").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retrievals_answer_in_the_shapes_of_dspy_and_search_r1() {
    let server = TestServer::default().await;
    let (status, health) = server.get("/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["docstore"], "corpus");
    assert!(health["snapshot"].as_str().unwrap().starts_with("corpus-"));

    // DSPy's ColBERTv2 client: GET (and POST) /api/search.
    let (status, colbert) = server
        .get("/api/search?query=railway+station+Edinburgh&k=3")
        .await;
    assert_eq!(status, 200);
    assert_eq!(colbert["query"], "railway station Edinburgh");
    let topk = colbert["topk"].as_array().unwrap();
    assert_eq!(topk.len(), 3);
    let first = &topk[0];
    assert!(
        first["text"]
            .as_str()
            .unwrap()
            .starts_with("Edinburgh Waverley railway station | "),
        "{first}"
    );
    let ranks: Vec<u64> = topk.iter().map(|hit| hit["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [1, 2, 3]);
    let scores: Vec<f64> = topk.iter().map(|hit| hit["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|pair| pair[0] >= pair[1]), "{scores:?}");
    let probs: f64 = topk.iter().map(|hit| hit["prob"].as_f64().unwrap()).sum();
    assert!((probs - 1.0).abs() < 1e-9, "{probs}");
    assert!(first["pid"].is_u64());
    let (_, posted) = server
        .post(
            "/api/search",
            json!({"query": "railway station Edinburgh", "k": 3}),
        )
        .await;
    assert_eq!(posted, colbert);
    // k is capped at 100, as the ColBERT server does: the 60 pages hold fewer matches.
    let (status, many) = server.get("/api/search?query=the&k=1000").await;
    assert_eq!(status, 200);
    assert!(many["topk"].as_array().unwrap().len() <= 60);

    // Search-R1's client: POST /retrieve, with and without scores.
    let (status, scored) = server
        .post(
            "/retrieve",
            json!({"queries": ["railway station Edinburgh", "Grand Ole Opry"], "topk": 2, "return_scores": true}),
        )
        .await;
    assert_eq!(status, 200);
    let result = scored["result"].as_array().unwrap();
    assert_eq!(result.len(), 2);
    let hit = &result[0][0];
    let contents = hit["document"]["contents"].as_str().unwrap();
    assert!(
        contents.starts_with("\"Edinburgh Waverley railway station\"\n"),
        "{contents}"
    );
    assert!(hit["document"]["id"].is_string());
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    assert_eq!(
        result[1][0]["document"]["contents"]
            .as_str()
            .unwrap()
            .lines()
            .next(),
        Some("\"Grand Ole Opry\"")
    );
    let (_, plain) = server
        .post(
            "/retrieve",
            json!({"queries": ["railway station Edinburgh"], "topk": 2}),
        )
        .await;
    assert_eq!(plain["result"][0][0], hit["document"]);
    assert_eq!(plain["result"][0].as_array().unwrap().len(), 2);
}

/// Reads from `stream` until the server closes it (or `limit` passes): what it sent.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(limit, stream.read_to_end(&mut received)).await;
    read.ok().map(|_| String::from_utf8_lossy(&received).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_timed_out_and_do_not_stop_the_others() {
    let limits = ServeLimits {
        header_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(600),
        ..ServeLimits::default()
    };
    let server = TestServer::start(pages(), Profile::Default, key(), limits).await;
    // Half a request line, then nothing: dropped after the header timeout.
    let mut headers = TcpStream::connect(server.address()).await.unwrap();
    headers
        .write_all(b"POST /v1/step HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // A whole header, half a body, then nothing: a 408 after the request timeout.
    let mut body = TcpStream::connect(server.address()).await.unwrap();
    body.write_all(b"POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"action\"")
        .await
        .unwrap();
    // Meanwhile the others are served.
    assert_eq!(server.get("/health").await.0, 200);
    let dropped = read_until_closed(&mut headers, Duration::from_secs(5)).await;
    assert!(dropped.is_some(), "the connection was not closed");
    let answered = read_until_closed(&mut body, Duration::from_secs(5))
        .await
        .expect("closed");
    assert!(answered.starts_with("HTTP/1.1 408"), "{answered}");
    assert_eq!(server.get("/health").await.0, 200);
}

/// A socket of this machine's IPv4 TCP table (Linux's `/proc/net/tcp`): its addresses, whether
/// it listens, the bytes it sent that the other end has not acknowledged, and what waits in its
/// receive queue — for a listening socket the connections not yet accepted, for a connection the
/// bytes its process has not read. The tests below wait on these instead of sleeping.
struct TcpEntry {
    local: std::net::SocketAddr,
    remote: std::net::SocketAddr,
    listening: bool,
    unacknowledged: u64,
    queued: u64,
}

fn tcp_table() -> Vec<TcpEntry> {
    let address = |field: &str| {
        let (ip, port) = field.split_once(':').unwrap();
        let ip = u32::from_str_radix(ip, 16).unwrap().to_ne_bytes();
        std::net::SocketAddr::from((ip, u16::from_str_radix(port, 16).unwrap()))
    };
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (unacknowledged, queued) = fields[4].split_once(':').unwrap();
            TcpEntry {
                local: address(fields[1]),
                remote: address(fields[2]),
                listening: fields[3] == "0A",
                unacknowledged: u64::from_str_radix(unacknowledged, 16).unwrap(),
                queued: u64::from_str_radix(queued, 16).unwrap(),
            }
        })
        .collect()
}

/// The connections waiting to be accepted at `address`; `None` when nothing listens there.
fn accept_queue(address: std::net::SocketAddr) -> Option<u64> {
    tcp_table()
        .into_iter()
        .find(|entry| entry.listening && entry.local == address)
        .map(|entry| entry.queued)
}

/// Whether the server at `server` has read everything the client at `client` sent: the server's
/// end acknowledged it all and holds none of it unread.
fn read_by_server(server: std::net::SocketAddr, client: std::net::SocketAddr) -> bool {
    let table = tcp_table();
    let end = |local, remote| {
        table
            .iter()
            .find(|entry| !entry.listening && entry.local == local && entry.remote == remote)
    };
    matches!(
        (end(client, server), end(server, client)),
        (Some(sent), Some(received)) if sent.unacknowledged == 0 && received.queued == 0
    )
}

/// Waits until `condition` holds (failing after a minute: something hangs).
fn wait_until(condition: impl Fn() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "never {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `GET /health` on an open keep-alive connection: the status.
async fn health_on(stream: &mut TcpStream) -> u16 {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut received = Vec::new();
    loop {
        let mut buffer = [0; 1024];
        let n = stream.read(&mut buffer).await.unwrap();
        assert!(n > 0, "the connection closed");
        received.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&received);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .unwrap()
                .parse()
                .unwrap();
            if body.len() >= length {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_bounded_and_a_vanished_client_costs_nothing() {
    let limits = ServeLimits {
        max_connections: 1,
        ..ServeLimits::default()
    };
    let server = TestServer::start(pages(), Profile::Default, key(), limits).await;
    let listening: std::net::SocketAddr = server.address().parse().unwrap();
    // One connection held open, and served: the next one waits to be accepted.
    let mut held = TcpStream::connect(listening).await.unwrap();
    assert_eq!(health_on(&mut held).await, 200);
    let waiting = tokio::spawn({
        let url = format!("{}/health", server.url);
        async move {
            crate::http_client()
                .get(url)
                .send()
                .await
                .map(|response| response.status().as_u16())
        }
    });
    tokio::task::spawn_blocking(move || {
        wait_until(
            || accept_queue(listening) == Some(1),
            "queued the second connection",
        )
    })
    .await
    .unwrap();
    // The first is still served while the second waits, not accepted.
    assert_eq!(health_on(&mut held).await, 200);
    assert_eq!(
        accept_queue(listening),
        Some(1),
        "a second connection was accepted beside the first"
    );
    assert!(!waiting.is_finished());
    drop(held);
    assert_eq!(waiting.await.unwrap().unwrap(), 200, "served once the first left");

    // Clients that send a request and leave before the answer.
    for _ in 0..20 {
        let mut stream = TcpStream::connect(server.address()).await.unwrap();
        let body = r#"{"action": "Search[railway station]", "state": null}"#;
        let request = format!(
            "POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        drop(stream);
    }
    let (status, answer) = server
        .post(
            "/v1/step",
            json!({"action": "Search[Grand Ole Opry]", "state": null}),
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        answer["observation"]
            .as_str()
            .unwrap()
            .starts_with("The Grand Ole Opry")
    );
}

#[test]
fn sigterm_drains_the_request_in_flight_then_exits_0() {
    use std::io::{BufRead, BufReader, Read, Write};
    let corpus = fixture("index/pages.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(["serve", "--listen", "127.0.0.1:0", "--docstore"])
        .arg(format!("corpus:{}", corpus.display()))
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut startup = String::new();
    stderr.read_line(&mut startup).unwrap();
    assert!(
        startup.starts_with("serving corpus (snapshot corpus-"),
        "{startup}"
    );
    assert!(startup.contains("default profile"), "{startup}");
    let address = startup
        .split("http://")
        .nth(1)
        .unwrap()
        .split(": ")
        .next()
        .unwrap();
    // The request's headers and half its body, then SIGTERM, then the rest of the body.
    let body = r#"{"action": "Search[Grand Ole Opry]", "state": null}"#;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        &body[..10]
    )
    .unwrap();
    // The server has read them: the request is in flight.
    let (server_address, client) = (address.parse().unwrap(), stream.local_addr().unwrap());
    wait_until(
        || read_by_server(server_address, client),
        "read the request's first half",
    );
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    // It stops listening (it drains) before the rest of the body comes.
    wait_until(
        || accept_queue(server_address).is_none(),
        "stopped listening on SIGTERM",
    );
    stream.write_all(&body.as_bytes()[10..]).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("The Grand Ole Opry"), "{answer}");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "stopped: every request in flight was answered\n");
    // Nothing on stdout.
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert_eq!(stdout, "");
}

/// A corpus of `n_pages` pages that all match `alpha`, each with a title of 600,000 bytes.
fn long_titles(dir: &std::path::Path, n_pages: usize) -> std::path::PathBuf {
    let corpus = dir.join("long-titles.jsonl");
    let pages: String = (0..n_pages)
        .map(|idx| {
            let title = format!("Alpha {idx} {}", "beta ".repeat(120_000));
            format!("{}\n", json!({"title": title, "text": "Alpha is a letter."}))
        })
        .collect();
    std::fs::write(&corpus, pages).unwrap();
    corpus
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrieval_asking_for_too_many_hits_or_answering_too_much_is_a_413() {
    let server = TestServer::default().await;
    // 256 queries × topk 100: 4.9 KB asking for 25,600 hits.
    let queries: Vec<String> = (0..256).map(|idx| format!("railway station {idx}")).collect();
    let (status, answer) = server
        .post("/retrieve", json!({"queries": queries, "topk": 100}))
        .await;
    assert_eq!(status, 413);
    assert_eq!(
        answer["error"],
        "256 queries × topk 100 ask for 25600 hits, more than the 1024 one request can ask for: send fewer queries or a smaller topk"
    );
    // 256 queries × topk 4 is within the bound.
    let (status, answer) = server
        .post("/retrieve", json!({"queries": queries, "topk": 4}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["result"].as_array().unwrap().len(), 256);

    // Pages whose titles alone come to more than an answer may hold (4 MiB).
    let dir = tempfile::tempdir().unwrap();
    let corpus = long_titles(dir.path(), 8);
    let long = TestServer::start(
        DocstoreKind::Corpus(corpus),
        Profile::Default,
        key(),
        ServeLimits::default(),
    )
    .await;
    let (status, answer) = long
        .post("/retrieve", json!({"queries": ["alpha"], "topk": 8}))
        .await;
    assert_eq!(status, 413, "{:.300}", answer.to_string());
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.ends_with("bytes, more than the 4194304 one answer can be: ask for fewer queries or hits"),
        "{error}"
    );
    let (status, answer) = long.get("/api/search?query=alpha&k=8").await;
    assert_eq!(status, 413, "{:.300}", answer.to_string());
    let (status, _) = long
        .post("/retrieve", json!({"queries": ["alpha"], "topk": 2}))
        .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_client_does_not_read_is_cut_off_at_the_request_timeout() {
    // An answer of some 19 MB (answers may be that large here), more than the kernel buffers
    // between the two ends, to a client with a small receive window that reads 1 KiB every 50 ms
    // (it would take some 15 minutes to read it all).
    let dir = tempfile::tempdir().unwrap();
    let corpus = long_titles(dir.path(), 32);
    let limits = ServeLimits {
        request_timeout: Duration::from_millis(500),
        answer_bytes: 64 * 1024 * 1024,
        ..ServeLimits::default()
    };
    let server = TestServer::start(DocstoreKind::Corpus(corpus), Profile::Default, key(), limits).await;
    let body = json!({"queries": ["alpha"], "topk": 32}).to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(server.address().parse().unwrap()).await.unwrap();
    let request = format!(
        "POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut received = Vec::new();
    let mut pace = tokio::time::interval(Duration::from_millis(50));
    let ended = loop {
        pace.tick().await;
        let mut chunk = [0u8; 1024];
        match stream.read(&mut chunk).await {
            Ok(0) => break "closed",
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(_) => break "reset",
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the answer was still being sent after 10 s ({} bytes read)",
            received.len()
        );
    };
    let head = String::from_utf8_lossy(&received[..received.len().min(200)]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .expect("a content length")
        .parse()
        .unwrap();
    assert!(length > 16_000_000, "{length}");
    assert!(received.len() < length, "{ended} after the whole answer");
    // The server goes on serving.
    assert_eq!(server.get("/health").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_search_queue_is_a_503_with_retry_after_and_an_abandoned_search_is_skipped() {
    let limits = ServeLimits {
        request_timeout: Duration::from_millis(300),
        ..ServeLimits::default()
    };
    let docstore = opened(pages(), Profile::Default, PoolSize { threads: 1, queue: 1 });
    let server = TestServer::serving(docstore.clone(), key(), limits).await;
    // The pool's one thread held until released, and known to be held.
    let (started, mut is_started) = tokio::sync::mpsc::channel::<()>(1);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let holding = tokio::spawn({
        let docstore = docstore.clone();
        async move {
            docstore
                .on_index(move |_| {
                    started.blocking_send(()).unwrap();
                    released.recv().unwrap();
                })
                .await
        }
    });
    is_started.recv().await.unwrap();
    // A retrieval waits in the queue past its request's timeout: a 408, its search abandoned.
    let retrieval = json!({"queries": ["Grand Ole Opry"], "topk": 1});
    let timed_out = crate::http_client()
        .post(format!("{}/retrieve", server.url))
        .json(&retrieval)
        .send()
        .await
        .unwrap();
    assert_eq!(timed_out.status(), 408);
    // The queue is full: the next one is refused at once, told when to come back.
    let response = crate::http_client()
        .post(format!("{}/retrieve", server.url))
        .json(&retrieval)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(
        answer["error"],
        "the server is busy: too many searches are waiting; retry shortly"
    );
    release.send(()).unwrap();
    assert!(holding.await.unwrap().unwrap().is_ok());
    // The abandoned search is skipped (the queue is full until the thread has taken it), the
    // thread free again.
    let (status, answer) = loop {
        match server.post("/retrieve", retrieval.clone()).await {
            (503, _) => tokio::task::yield_now().await,
            other => break other,
        }
    };
    assert_eq!(status, 200, "{answer}");
}

/// `serve` over the test corpus in a process of its own, with `args`: the process and the
/// address it listens on.
fn serve_process(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let corpus = crate::test_corpus();
    let mut child = crate::binary()
        .args(["serve", "--docstore", &corpus])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut startup = String::new();
    stderr.read_line(&mut startup).unwrap();
    let address = startup
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split(": ").next())
        .unwrap_or_else(|| panic!("{startup}"))
        .to_owned();
    child.stderr = Some(stderr.into_inner());
    (child, address)
}

#[test]
fn a_signed_state_with_a_cursor_past_its_matches_is_refused_at_once() {
    use react_docstore::apps::serve::StepState;
    use std::io::{Read, Write};
    // A server in a process of its own (a step that spins could not be stopped in this one),
    // with a key from a file.
    let dir = tempfile::tempdir().unwrap();
    let secret = "a key file's key, 32 bytes or more";
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, format!("{secret}\n")).unwrap();
    let (mut child, address) = serve_process(&[
        "--listen",
        "127.0.0.1:0",
        "--state-key-file",
        key_file.to_str().unwrap(),
    ]);
    // What a key holder (or a replica of an older snapshot) could sign: a cursor walked
    // `usize::MAX` times on a page with one match.
    let docstore = opened(pages(), Profile::Default, PoolSize { threads: 1, queue: 1 });
    let state = StepState {
        page_search: Some("Special Air Service".to_owned()),
        cursor: Some(("regiment".to_owned(), usize::MAX)),
        ..docstore.first_state()
    };
    let key = StateKey::new(secret.as_bytes()).unwrap();
    let body = json!({"action": "Lookup[regiment]", "state": key.encode(&state)}).to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let read = stream.read_to_string(&mut answer);
    child.kill().unwrap();
    child.wait().unwrap();
    read.expect("answered within 10 s");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let error = format!(
        "state does not fit this docstore: the page has 1 matches of `regiment`, the state has shown {}",
        usize::MAX
    );
    assert!(
        answer.ends_with(&format!("{{\"error\":\"{error}\"}}")),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retrievals_show_the_first_sentences_of_the_served_profile() {
    for profile in [Profile::Default, Profile::Paper] {
        let server = TestServer::start(pages(), profile, key(), ServeLimits::default()).await;
        let searched = explored(pages(), profile, &["Search[Special Air Service]"]).await;
        let (_, colbert) = server.get("/api/search?query=Special+Air+Service&k=1").await;
        assert_eq!(
            colbert["topk"][0]["text"],
            format!("Special Air Service | {}", searched[0]),
            "{profile}"
        );
        let (_, r1) = server
            .post(
                "/retrieve",
                json!({"queries": ["Special Air Service"], "topk": 1}),
            )
            .await;
        assert_eq!(
            r1["result"][0][0]["contents"],
            format!("\"Special Air Service\"\n{}", searched[0]),
            "{profile}"
        );
    }
}

/// A client sending `total` bytes of body after `head`: it first sends 64 KiB, reads the
/// answer's status line, then sends the rest and closes its side. Whether it read the whole
/// answer and the server's orderly close, and the answer.
async fn send_after_answer(address: &str, head: &str, total: usize) -> (Result<(), std::io::Error>, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let first = 64 * 1024;
    stream.write_all(&vec![b' '; first]).await.unwrap();
    let mut answer = vec![0u8; 12];
    stream.read_exact(&mut answer).await.unwrap();
    let sent = async {
        stream.write_all(&vec![b' '; total - first]).await?;
        stream.shutdown().await?;
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).await?;
        answer.extend_from_slice(&rest);
        Ok(())
    }
    .await;
    (sent, String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_still_sending_a_body_over_the_limit_reads_its_413_not_a_reset() {
    let server = TestServer::default().await;
    let total = 2 * 1024 * 1024;
    let head = format!(
        "POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {total}\r\n\r\n"
    );
    let (sent, answer) = send_after_answer(server.address(), &head, total).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    sent.expect("the client sent its whole body and read the server's close");
    assert!(answer.ends_with("length limit exceeded"), "{answer}");
    // As a client library sends it, again and again.
    let client = crate::http_client();
    for _ in 0..10 {
        let response = client
            .post(format!("{}/retrieve", server.url))
            .body(vec![b' '; total])
            .send()
            .await
            .expect("an answer, not a reset");
        assert_eq!(response.status(), 413);
    }
}

#[test]
fn sigterm_past_the_drain_timeout_names_the_requests_abandoned_and_exits_1() {
    use std::io::{Read, Write};
    // `localhost` resolved: the startup line names the address it is bound to.
    let (mut child, address) = serve_process(&["--listen", "localhost:0", "--drain-timeout", "1"]);
    let mut health = std::net::TcpStream::connect(&address).unwrap();
    write!(
        health,
        "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    health.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // A request whose body never comes: still in flight when the drain time is over. The
    // server asks for the body (`100 Continue`) once its handler reads it.
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /v1/step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
    )
    .unwrap();
    let mut go_on = [0u8; 25];
    stream.read_exact(&mut go_on).unwrap();
    assert_eq!(&go_on, b"HTTP/1.1 100 Continue\r\n\r\n");
    write!(stream, "{{\"action\"").unwrap();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    child.stderr.take().unwrap().read_to_string(&mut rest).unwrap();
    assert_eq!(
        rest,
        "stopped: 1 request still in flight after the 1 s drain timeout was abandoned unanswered\n"
    );
    assert_eq!(status.code(), Some(1));
    drop(stream);
}

#[test]
fn the_state_key_comes_from_a_file_or_the_environment_never_the_command_line() {
    let corpus = crate::test_corpus();
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.key");
    std::fs::write(&short, "only sixteen byt\n").unwrap();
    let cases: [(&[&str], Option<&str>, &str); 3] = [
        (
            &["--state-key", "a secret everyone can read in ps output"],
            None,
            "error: `--state-key` is not taken on the command line, where every user of the machine can read it: put the key in a file (`--state-key-file FILE`) or in REACT_STATE_KEY\n",
        ),
        (
            &["--state-key-file", short.to_str().unwrap()],
            None,
            "the state key is 16 bytes: use at least 32",
        ),
        (
            &[],
            Some("too short"),
            "error: REACT_STATE_KEY: the state key is 9 bytes",
        ),
    ];
    for (args, env, expected) in cases {
        let mut command = crate::binary();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--docstore", &corpus])
            .args(args);
        if let Some(env) = env {
            command.env("REACT_STATE_KEY", env);
        }
        let (_, stderr, code) = crate::output_within_30s(&mut command, "a refused key");
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("a secret everyone"), "{stderr}");
    }
}

#[test]
fn serving_distractor_is_refused_in_the_words_every_command_refuses_it() {
    use react_docstore::docstore::Opener;
    let config = DocstoreConfig {
        kind: DocstoreKind::Distractor,
        ..DocstoreConfig::new(Profile::Default)
    };
    let Err(error) = ServedDocstore::open(&config, PoolSize::for_this_machine()) else {
        panic!("`distractor` is served");
    };
    let refusal = |command| {
        DocstoreKind::Distractor
            .check_opener(Opener::Command(command))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(error.to_string(), refusal("serve"));
    assert_eq!(
        refusal("explore"),
        "`--docstore distractor` searches each question's own paragraphs, which only `eval` has (a HotpotQA file with contexts); `explore` can search Wikipedia, `--docstore index:DIR` (built by `index build`) or `--docstore corpus:FILE` (that file's paragraphs pooled, or JSON Lines pages)"
    );
}
