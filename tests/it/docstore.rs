//! The Wikipedia docstore against a local server serving recorded pages: both profiles, the
//! client's politeness and failure handling, and the page cache.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use react_docstore::base::profile::Profile;
use react_docstore::docstore::{Docstore, DocstoreConfig, DocstoreError, DocstoreSource, HttpPolicy};
use wiremock::matchers::{method, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{HTML, fixture, wikipedia_page};

/// Fast retries, so failure tests take milliseconds.
fn config(server: &MockServer, cache_dir: &Path, profile: Profile) -> DocstoreConfig {
    DocstoreConfig {
        wiki_url: server.uri(),
        cache_dir: Some(cache_dir.to_owned()),
        http: HttpPolicy {
            timeout: Duration::from_secs(5),
            max_retries: 2,
            min_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(10),
            ..HttpPolicy::default()
        },
        ..DocstoreConfig::new(profile)
    }
}

fn open(config: &DocstoreConfig) -> Box<dyn Docstore> {
    config.open().expect("docstore opens").open(&[])
}

const HIT_OBS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/wikipedia/colorado_orogeny_hit.paper-observation.txt"
));

const RESULT1: &str = "(Result 1 / 2) It is recorded in the Colorado orogen, a >500-km-wide belt of oceanic \
arc rock that extends southward into New Mexico.";
const RESULT2: &str = "(Result 2 / 2) The Colorado orogen, formerly called the Colorado province, is a \
>500-km-wide belt of oceanic arc rock (1.78\u{2013}1.65 Ga) that extends southward into New Mexico and \
composes a major part of the Proterozoic provinces of southwestern United States.";

#[tokio::test]
async fn paper_profile_reproduces_the_reference_strings() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let mut docstore = open(&config(&server, cache.path(), Profile::Paper));

    assert_eq!(docstore.lookup("New Mexico"), "No more results.\n");
    assert_eq!(docstore.search("Colorado orogeny").await.unwrap(), HIT_OBS);
    assert_eq!(docstore.lookup("New Mexico"), RESULT1);
    assert_eq!(docstore.lookup("new mexico"), RESULT1);
    assert_eq!(docstore.lookup("new mexico"), RESULT2);
    assert_eq!(docstore.lookup("new mexico"), "No more results.\n");
    assert_eq!(
        docstore.lookup("High Plains"),
        "(Result 1 / 1) The eastern sector extends into the High Plains and is called the Central Plains orogeny."
    );
    assert_eq!(docstore.lookup("High Plains"), "No more results.\n");
    assert_eq!(docstore.lookup("elevation"), "No more results.\n");

    // A miss keeps the page and the cursor.
    assert_eq!(docstore.lookup("New Mexico"), RESULT1);
    assert_eq!(
        docstore.search("Colorado orogenyy").await.unwrap(),
        "Could not find Colorado orogenyy. Similar: ['Colorado orogeny', 'Laramide orogeny', 'Sevier orogeny', \
         'Colorado Mineral Belt', 'Wyoming Craton']."
    );
    assert_eq!(docstore.lookup("New Mexico"), RESULT2);
    // No result headings: wikienv.py reads the zero-results page as an article, which opens it
    // and starts the cursor afresh.
    assert_eq!(
        docstore.search("Qwertzuiop Zzyzxian Orogeny").await.unwrap(),
        "There were no results matching the query.. The page \"Qwertzuiop Zzyzxian Orogeny\" does not \
         exist. You can create a draft and submit it for review or request that a redirect be created.. Main \
         pageContentsCurrent eventsRandom articleAbout WikipediaContact us. HelpLearn to editCommunity \
         portalRecent changesUpload fileSpecial pages."
    );
    assert_eq!(docstore.lookup("New Mexico"), "No more results.\n");
    assert_eq!(
        docstore.lookup("draft"),
        "(Result 1 / 1) You can create a draft and submit it for review or request that a redirect be created.."
    );
}

#[tokio::test]
async fn paper_profile_re_searches_a_disambiguation_page_in_brackets() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let mut docstore = open(&config(&server, cache.path(), Profile::Paper));
    // The ReAct few-shot prompt's own observation shape: the bracketed entity, redirect notes kept.
    assert_eq!(
        docstore.search("Adam Clayton Powell").await.unwrap(),
        "Could not find [Adam Clayton Powell]. Similar: ['Adam Clayton Powell III', 'Seventh Avenue (Manhattan) \
         (redirect from Adam Clayton Powell Jr. Boulevard)', 'Adam Clayton Powell Jr. State Office Building', \
         'Isabel Washington Powell', 'Adam Powell']."
    );
}

/// A transcript of actions and observations, for snapshots.
async fn transcript(docstore: &mut dyn Docstore, actions: &[&str]) -> String {
    let mut out = String::new();
    for action in actions {
        let observation =
            if let Some(entity) = action.strip_prefix("Search[").and_then(|a| a.strip_suffix(']')) {
                docstore.search(entity).await.unwrap()
            } else if let Some(keyword) = action.strip_prefix("Lookup[").and_then(|a| a.strip_suffix(']')) {
                docstore.lookup(keyword)
            } else {
                panic!("not an action: {action}")
            };
        out.push_str(&format!("Action: {action}\nObservation: {observation:?}\n\n"));
    }
    out
}

#[tokio::test]
async fn default_profile_on_the_recorded_and_synthetic_pages() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let mut docstore = open(&config(&server, cache.path(), Profile::Default));
    let text = transcript(
        docstore.as_mut(),
        &[
            "Lookup[New Mexico]",
            "Search[Colorado orogeny]",
            "Lookup[New Mexico]",
            "Lookup[new mexico]",
            "Lookup[New Mexico]",
            "Lookup[High Plains]",
            "Lookup[elevation]",
            "Lookup[New Mexico]",
            "Search[Colorado orogenyy]",
            "Lookup[New Mexico]",
            "Search[Qwertzuiop Zzyzxian Orogeny]",
            "Search[Adam Clayton Powell]",
            "Search[Gateway Arch]",
            "Lookup[U.S.]",
            "Lookup[Jr.]",
            "Lookup[coordinates]",
            "Lookup[cosh]",
        ],
    )
    .await;
    assert_snapshot!(text);
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "1"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(wikipedia_page("colorado_orogeny_hit.html"), HTML),
        )
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let mut docstore = open(&config(&server, cache.path(), Profile::Paper));
    let start = Instant::now();
    assert_eq!(docstore.search("Colorado orogeny").await.unwrap(), HIT_OBS);
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured"
    );
}

#[tokio::test]
async fn gives_up_after_the_retry_budget() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .expect(3)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let mut docstore = open(&config(&server, cache.path(), Profile::Default));
    let error = docstore.search("Colorado orogeny").await.unwrap_err();
    assert!(
        matches!(
            error,
            DocstoreError::Status {
                status: 503,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "GET {}/w/index.php?search=Colorado+orogeny answered HTTP 503 after 3 attempt(s)",
            server.uri()
        )
    );
    // Nothing was cached: the next search asks again.
    assert!(std::fs::read_dir(cache.path()).map_or(true, |mut entries| entries.next().is_none()));
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(403))
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let error = open(&config(&server, cache.path(), Profile::Default))
        .search("x")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("HTTP 403 after 1 attempt(s)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_timeout_is_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(2)))
        .expect(3)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = config(&server, cache.path(), Profile::Default);
    config.http.timeout = Duration::from_millis(100);
    let error = open(&config).search("slow").await.unwrap_err();
    assert!(
        matches!(error, DocstoreError::Network { attempts: 3, .. }),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("GET "), "{error}");
}

#[tokio::test]
async fn requests_carry_the_configured_user_agent() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(wiremock::matchers::header(
            "user-agent",
            "qa-lab/1.0 (qa@example.org)",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(b"<p>one two three</p>".to_vec(), HTML))
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let config = DocstoreConfig {
        user_agent: "qa-lab/1.0 (qa@example.org)".to_owned(),
        ..config(&server, cache.path(), Profile::Default)
    };
    assert_eq!(open(&config).search("x").await.unwrap(), "one two three");
}

#[tokio::test]
async fn a_cached_search_makes_no_request() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param("search", "Colorado orogeny"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(wikipedia_page("colorado_orogeny_hit.html"), HTML),
        )
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let paper = config(&server, cache.path(), Profile::Paper);
    assert_eq!(open(&paper).search("Colorado orogeny").await.unwrap(), HIT_OBS);
    // Another explorer, another source (a later run) and the other profile: all from the cache.
    assert_eq!(open(&paper).search("Colorado orogeny").await.unwrap(), HIT_OBS);
    let default = config(&server, cache.path(), Profile::Default);
    let observation = open(&default).search("Colorado orogeny").await.unwrap();
    assert!(observation.ends_with("part of the larger Yavapai orogeny. The Colorado orogen, formerly called \
        the Colorado province, is a >500-km-wide belt of oceanic arc rock (1.78–1.65 Ga) that extends southward \
        into New Mexico and composes a major part of the Proterozoic provinces of southwestern United States."));
    let offline = DocstoreConfig {
        offline: true,
        ..paper
    };
    assert_eq!(open(&offline).search("Colorado orogeny").await.unwrap(), HIT_OBS);
}

#[tokio::test]
async fn identical_concurrent_searches_make_one_request() {
    let server = slow_server(wikipedia_page("colorado_orogeny_hit.html"), Some(1)).await;
    let cache = tempfile::tempdir().unwrap();
    let source: Arc<dyn DocstoreSource> = config(&server, cache.path(), Profile::Paper).open().unwrap();
    let searches = (0..8).map(|_| {
        let source = source.clone();
        tokio::spawn(async move { source.open(&[]).search("Colorado orogeny").await.unwrap() })
    });
    for observation in futures::future::join_all(searches).await {
        assert_eq!(observation.unwrap(), HIT_OBS);
    }
}

/// A page is read once per search, under the searching profile: a fresh page's one reading is
/// what the fetcher's check judges and what the search shows (a second parse, for the check or
/// for the caller, would count in `pages_read`); a cached page is read once; a fresh page that
/// several searches wait on is fetched and read once for all of them.
#[tokio::test]
async fn a_fresh_page_is_parsed_once() {
    use react_docstore::docstore::{Fetcher, WikipediaSource};
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param("search", "Colorado orogeny"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(wikipedia_page("colorado_orogeny_hit.html"), HTML),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("search", "Colorado orogenyy"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(wikipedia_page("colorado_orogenyy_similar.html"), HTML)
                .set_delay(Duration::from_millis(300)),
        )
        .mount(&server)
        .await;
    for profile in [Profile::Paper, Profile::Default] {
        let cache = tempfile::tempdir().unwrap();
        let fetcher = Fetcher::new(&config(&server, cache.path(), profile));
        let source = WikipediaSource::new(fetcher.clone(), server.uri(), profile);
        let counts = || (fetcher.requests_sent(), fetcher.pages_read());

        let fresh = source.explorer().search("Colorado orogeny").await.unwrap();
        assert_eq!(counts(), (1, 1), "{profile}: a fresh page");
        let cached = source.explorer().search("Colorado orogeny").await.unwrap();
        assert_eq!(cached, fresh);
        assert_eq!(counts(), (1, 2), "{profile}: the same page from the cache");

        let searches = (0..8).map(|_| {
            let mut explorer = source.explorer();
            async move { explorer.search("Colorado orogenyy").await.unwrap() }
        });
        let observations = futures::future::join_all(searches).await;
        assert!(observations[0].starts_with("Could not find Colorado orogenyy. Similar: "));
        assert!(
            observations
                .iter()
                .all(|observation| *observation == observations[0])
        );
        assert_eq!(counts(), (2, 3), "{profile}: eight searches waiting on one page");
    }
}

/// Searches of one URL under both profiles at once are two fetches (keyed by URL and profile),
/// each read by its own profile's reader: neither gets the other's reading.
#[tokio::test]
async fn one_url_searched_under_both_profiles_at_once_reads_each_its_own_way() {
    let server = slow_server(wikipedia_page("colorado_orogeny_hit.html"), None).await;
    let cache = tempfile::tempdir().unwrap();
    let sources = config(&server, cache.path(), Profile::Default)
        .open_sources()
        .unwrap();
    let search = |profile| {
        let mut explorer = sources.get(profile).open(&[]);
        async move { explorer.search("Colorado orogeny").await.unwrap() }
    };
    let (paper, default) = futures::join!(search(Profile::Paper), search(Profile::Default));
    assert_eq!(paper, HIT_OBS);
    assert!(
        default.starts_with("The Colorado orogeny was an episode of mountain building"),
        "{default}"
    );
    assert_ne!(paper, default);
}

/// A Wikipedia answering every search with `body` after 300 ms; when `n_requests` is given, it
/// expects exactly that many requests.
async fn slow_server(body: Vec<u8>, n_requests: Option<u64>) -> MockServer {
    let server = MockServer::start().await;
    let mock = Mock::given(method("GET")).respond_with(
        ResponseTemplate::new(200)
            .set_body_raw(body, HTML)
            .set_delay(Duration::from_millis(300)),
    );
    match n_requests {
        Some(n_requests) => mock.expect(n_requests),
        None => mock,
    }
    .mount(&server)
    .await;
    server
}

/// A one-paragraph page: three words, one sentence.
fn one_paragraph() -> Vec<u8> {
    b"<p>one two three</p>".to_vec()
}

#[tokio::test]
async fn requests_in_flight_are_limited() {
    let server = slow_server(one_paragraph(), Some(6)).await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = config(&server, cache.path(), Profile::Default);
    config.http.max_in_flight = 2;
    let source = config.open().unwrap();
    let start = Instant::now();
    let searches = (0..6).map(|idx| {
        let source = source.clone();
        tokio::spawn(async move { source.open(&[]).search(&format!("page {idx}")).await.unwrap() })
    });
    for observation in futures::future::join_all(searches).await {
        assert_eq!(observation.unwrap(), "one two three");
    }
    // Six requests of 300 ms, two at a time: at least three rounds.
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
}

/// A search dropped mid-request (Ctrl-C, a question's task cancelled) gives its request slot
/// back: with every slot taken by a cancelled search, a later search still completes, and the
/// cancelled fetches run to their end on their own (their pages are cached, not fetched again).
#[tokio::test]
async fn cancelled_searches_leave_the_fetcher_usable() {
    let server = slow_server(one_paragraph(), Some(5)).await;
    let cache = tempfile::tempdir().unwrap();
    let config = config(&server, cache.path(), Profile::Default);
    let source = config.open().unwrap();
    for idx in 0..config.http.max_in_flight {
        let mut docstore = source.open(&[]);
        let entity = format!("cancelled {idx}");
        let search = docstore.search(&entity);
        let cancelled = tokio::time::timeout(Duration::from_millis(50), search).await;
        assert!(cancelled.is_err(), "search {idx} ended before it was cancelled");
    }
    let later = tokio::time::timeout(Duration::from_secs(10), async {
        source.open(&[]).search("later").await
    })
    .await
    .expect("a search after cancelled ones completes");
    assert_eq!(later.unwrap(), "one two three");
    // A cancelled search asked again joins its fetch, or reads what it cached: no new request.
    assert_eq!(
        source.open(&[]).search("cancelled 0").await.unwrap(),
        "one two three"
    );
}

#[tokio::test]
async fn offline_miss_names_what_is_missing() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let config = DocstoreConfig {
        offline: true,
        ..config(&server, cache.path(), Profile::Default)
    };
    let error = open(&config).search("Colorado orogeny").await.unwrap_err();
    assert!(matches!(error, DocstoreError::NotCached { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`Colorado orogeny`"), "{message}");
    assert!(message.contains(&cache.path().display().to_string()), "{message}");
    assert!(
        message.contains("/w/index.php?search=Colorado+orogeny"),
        "{message}"
    );
}

/// What a search says when Wikipedia cannot be reached at all, once, without retrying.
fn unreachable_message(host: &str, reason: &str) -> String {
    format!(
        "cannot reach Wikipedia at `{host}` ({reason}): without a network, search an offline index (`--docstore index:DIR`, built by `index build`) or the pages cached before (`--offline`)"
    )
}

/// A local port nothing listens on: bound by the system, then let go.
fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_wikipedia_fails_at_once_and_names_the_offline_docstores() {
    let cache = tempfile::tempdir().unwrap();
    let port = refused_port();
    // `.invalid` never resolves (RFC 6761): no network is asked anything that could answer.
    for (wiki_url, host, reason) in [
        (
            format!("http://127.0.0.1:{port}"),
            format!("127.0.0.1:{port}"),
            "connection refused",
        ),
        (
            "http://wiki.invalid".to_owned(),
            "wiki.invalid".to_owned(),
            "its name does not resolve",
        ),
    ] {
        let config = DocstoreConfig {
            wiki_url,
            cache_dir: Some(cache.path().to_owned()),
            ..DocstoreConfig::new(Profile::Default)
        };
        let error = open(&config).search("Colorado orogeny").await.unwrap_err();
        assert!(matches!(error, DocstoreError::Unreachable { .. }), "{error:?}");
        assert_eq!(error.to_string(), unreachable_message(&host, reason));
    }

    // From the command line: the error alone, no retry warnings (the default policy would wait
    // 15 s and more between six attempts).
    let output = crate::binary()
        .args(["explore", "--cache-dir"])
        .arg(cache.path())
        .args([
            "--wiki-url",
            &format!("http://127.0.0.1:{port}"),
            "Search[Colorado orogeny]",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let expected = unreachable_message(&format!("127.0.0.1:{port}"), "connection refused");
    assert!(
        stderr.starts_with(&format!("error: {expected}: error sending request: ")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[tokio::test]
async fn cache_files_stay_inside_the_cache_directory() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(b"<p>one two three</p>".to_vec(), HTML))
        .mount(&server)
        .await;
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    for profile in [Profile::Paper, Profile::Default] {
        let mut docstore = open(&config(&server, &cache, profile));
        for entity in [
            "../../escape",
            "a/b/../../c",
            "..",
            "/etc/passwd",
            "Zürich/東京/..",
            "..\\..\\win",
            "%2e%2e%2f",
        ] {
            assert!(
                docstore
                    .search(entity)
                    .await
                    .unwrap()
                    .starts_with("one two three"),
                "{entity}"
            );
        }
    }
    // Only `cache/http/*.json` exists under the root.
    let mut files = Vec::new();
    let mut dirs = vec![root.path().to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(!files.is_empty());
    for file in &files {
        assert_eq!(
            file.parent(),
            Some(cache.join("http").as_path()),
            "{}",
            file.display()
        );
        assert_eq!(file.extension().and_then(|ext| ext.to_str()), Some("json"));
    }
}

#[tokio::test]
async fn odd_bodies_give_an_observation_or_a_clear_error() {
    let server = MockServer::start().await;
    let respond = |search: &str, body: Vec<u8>| {
        Mock::given(method("GET"))
            .and(query_param("search", search))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, HTML))
    };
    respond("empty", Vec::new()).mount(&server).await;
    respond("blank", b"  \n ".to_vec()).mount(&server).await;
    respond(
        "malformed",
        // Unclosed tags inside a document that ends: a document that stops before `</html>` is
        // a page cut short (see `a_page_cut_short_is_fetched_again_and_never_cached`).
        b"<html><p>Broken <b>markup <p>with <i>unclosed</ul> tags and & stray < signs</html>".to_vec(),
    )
    .mount(&server)
    .await;
    respond("binary", vec![0xff, 0xfe, 0x00, 0x3c, 0x70, 0x3e, 0x80, 0x81])
        .mount(&server)
        .await;
    let mut huge = String::from("<html><body><div class=\"mw-parser-output\">");
    while huge.len() < 10 * 1024 * 1024 {
        huge.push_str(
            "<p>The quick brown fox jumps over the lazy dog. Pack my box with five dozen jugs.</p>\n",
        );
    }
    huge.push_str("</div></body></html>");
    respond("huge", huge.into_bytes()).mount(&server).await;

    let cache = tempfile::tempdir().unwrap();
    for profile in [Profile::Paper, Profile::Default] {
        let mut docstore = open(&config(&server, cache.path(), profile));
        for entity in ["empty", "blank"] {
            let error = docstore.search(entity).await.unwrap_err();
            assert!(
                error.to_string().contains("answered with an empty page"),
                "{error}"
            );
        }
        let malformed = docstore.search("malformed").await.unwrap();
        assert!(malformed.contains("Broken markup"), "{malformed}");
        // No text to speak of: the `default` reader keeps its one paragraph; the `paper` reader,
        // which keeps only blocks of three words or more, reads an empty article with no title,
        // which is not a page (the check judges the searching profile's own reading).
        match profile {
            Profile::Paper => {
                let error = docstore.search("binary").await.unwrap_err();
                assert!(
                    matches!(error, DocstoreError::NotAPage { attempts: 3, .. }),
                    "{error:?}"
                );
            }
            Profile::Default => {
                docstore.search("binary").await.unwrap();
            }
        }
        let huge = docstore.search("huge").await.unwrap();
        assert!(
            huge.starts_with("The quick brown fox jumps over the lazy dog."),
            "{huge}"
        );
    }

    let mut small = config(&server, cache.path(), Profile::Default);
    small.http.max_body_bytes = 1024;
    small.cache_dir = Some(cache.path().join("other"));
    let error = open(&small).search("huge").await.unwrap_err();
    assert!(
        matches!(error, DocstoreError::TooLarge { limit: 1024, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn distractor_docstore_searches_each_questions_own_paragraphs() {
    use react_docstore::docstore::{ContextParagraph, DocstoreKind};
    let records: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(fixture("docstore/hotpotqa-distractor-3.json")).unwrap(),
    )
    .unwrap();
    let context = |idx: usize| -> Vec<ContextParagraph> {
        react_docstore::docstore::context_paragraphs(&records[idx]["context"]).unwrap()
    };
    let config = DocstoreConfig {
        kind: DocstoreKind::Distractor,
        ..DocstoreConfig::new(Profile::Default)
    };
    let source = config.open().unwrap();
    let mut first = source.open(&context(0));
    let mut second = source.open(&context(1));
    assert!(
        first
            .search("VIVA Media")
            .await
            .unwrap()
            .starts_with("VIVA Media GmbH (until 2004")
    );
    // The second question's paragraphs know nothing of VIVA Media.
    assert_eq!(
        second.search("VIVA Media").await.unwrap(),
        "Could not find VIVA Media. No similar pages."
    );
    assert!(
        second
            .search("pete doherty")
            .await
            .unwrap()
            .starts_with("Peter Doherty (born 12 March 1979)")
    );
    assert_eq!(
        second.lookup("Libertines"),
        "(Result 1 / 1) He is best known for being co-frontman of the Libertines, which he formed with Carl \
         Barât in 1997."
    );
    // Without context every search misses.
    assert_eq!(
        source.open(&[]).search("VIVA Media").await.unwrap(),
        "Could not find VIVA Media. No similar pages."
    );
}

#[tokio::test]
async fn an_out_of_range_retry_after_is_an_error_quoting_the_server() {
    for (name, value, asked) in [
        ("retry-after", "1e30", "1e30 s"),
        ("retry-after-ms", "1e30", "1e30 ms"),
        ("retry-after", "18446744073709551616", "18446744073709551616 s"),
        ("retry-after", "121", "121 s"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(429).insert_header(name, value))
            .expect(1)
            .mount(&server)
            .await;
        let cache = tempfile::tempdir().unwrap();
        let error = open(&config(&server, cache.path(), Profile::Default))
            .search("Colorado orogeny")
            .await
            .unwrap_err();
        assert!(matches!(error, DocstoreError::WaitTooLong { .. }), "{error:?}");
        assert_eq!(
            error.to_string().replace(&server.uri(), "[SERVER]"),
            format!(
                "GET [SERVER]/w/index.php?search=Colorado+orogeny answered HTTP 429 and asked to wait {asked}, longer than the 120 s this client waits"
            )
        );
    }
    // Meaningless values are ignored: retried on the client's own backoff.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "-1e30"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(b"<p>one two three</p>".to_vec(), HTML))
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let docstore = open(&config(&server, cache.path(), Profile::Default));
    let (observation, logs) = crate::llm::captured_logs(async move {
        let mut docstore = docstore;
        docstore.search("x").await
    })
    .await;
    assert_eq!(observation.unwrap(), "one two three");
    let host = server.uri().trim_start_matches("http://").to_owned();
    assert!(
        logs.contains(&format!(
            "Wikipedia {host}: HTTP 503 Service Unavailable; retrying in 0.0 s, attempt 2 of 3"
        )),
        "{logs}"
    );
}

#[tokio::test]
async fn a_page_cut_short_is_fetched_again_and_never_cached() {
    let whole = wikipedia_page("colorado_orogeny_hit.html");
    // Well framed (the Content-Length is the cut body's), but the document stops in the site
    // chrome before the article: read as it is, it would be a page of menu entries.
    let cut = whole[..whole.len() * 3 / 10].to_vec();
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(cut.clone(), HTML))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(whole, HTML))
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let paper = config(&server, cache.path(), Profile::Paper);
    assert_eq!(open(&paper).search("Colorado orogeny").await.unwrap(), HIT_OBS);
    // What was cached is the whole page.
    let offline = DocstoreConfig {
        offline: true,
        ..paper
    };
    assert_eq!(open(&offline).search("Colorado orogeny").await.unwrap(), HIT_OBS);

    // Cut short every time: retried, then an error, and nothing cached.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(cut, HTML))
        .expect(3)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let error = open(&config(&server, cache.path(), Profile::Default))
        .search("Colorado orogeny")
        .await
        .unwrap_err();
    assert!(
        matches!(error, DocstoreError::NotAPage { attempts: 3, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string().replace(&server.uri(), "[SERVER]"),
        "GET [SERVER]/w/index.php?search=Colorado+orogeny did not answer with a whole search page (cut short, or not a wiki page) after 3 attempt(s)"
    );
    assert!(
        std::fs::read_dir(cache.path().join("http")).map_or(true, |mut entries| entries.next().is_none())
    );
}

#[tokio::test]
async fn searches_served_from_the_cache_build_no_http_client() {
    use react_docstore::docstore::{Fetcher, WikipediaSource};
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let config = config(&server, cache.path(), Profile::Paper);
    let search = |fetcher: &Fetcher| {
        let mut explorer = WikipediaSource::new(fetcher.clone(), server.uri(), Profile::Paper).explorer();
        async move { explorer.search("Colorado orogeny").await }
    };

    let fetcher = Fetcher::new(&config);
    assert!(!fetcher.client_built(), "built before any request");
    assert_eq!(search(&fetcher).await.unwrap(), HIT_OBS);
    assert!(fetcher.client_built());

    // A later run (replay, explore) served from the cache: no client, so no TLS roots loaded.
    let cached = Fetcher::new(&config);
    assert_eq!(search(&cached).await.unwrap(), HIT_OBS);
    assert!(!cached.client_built());
    let offline = Fetcher::new(&DocstoreConfig {
        offline: true,
        ..config.clone()
    });
    assert_eq!(search(&offline).await.unwrap(), HIT_OBS);
    let mut explorer = WikipediaSource::new(offline.clone(), server.uri(), Profile::Paper).explorer();
    let miss = explorer.search("Colorado orogenyy").await.unwrap_err();
    assert!(matches!(miss, DocstoreError::NotCached { .. }), "{miss:?}");
    assert!(!offline.client_built());
}

#[tokio::test]
async fn a_client_that_cannot_be_built_fails_the_first_request() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let config = DocstoreConfig {
        user_agent: "not\na header value".to_owned(),
        ..config(&server, cache.path(), Profile::Default)
    };
    // Opening builds nothing, so it cannot fail; the first request reports the failure.
    let source = config.open().unwrap();
    let error = source.open(&[]).search("Colorado orogeny").await.unwrap_err();
    assert!(matches!(error, DocstoreError::Client(_)), "{error:?}");
    assert_eq!(error.to_string(), "cannot build the HTTP client");
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_cache_holds_raw_bodies_and_still_reads_json_entries() {
    use react_docstore::docstore::PageCache;
    let server = crate::mock_wikipedia().await;
    let cache_dir = tempfile::tempdir().unwrap();
    let config = config(&server, cache_dir.path(), Profile::Paper);
    assert_eq!(open(&config).search("Colorado orogeny").await.unwrap(), HIT_OBS);
    let url = react_docstore::docstore::search_url(&server.uri(), "Colorado orogeny", Profile::Paper);
    let cache = PageCache::new(cache_dir.path().to_owned());
    let entry = std::fs::read(cache.path_for(&url)).unwrap();
    let newline = entry.iter().position(|&byte| byte == b'\n').unwrap();
    let header = std::str::from_utf8(&entry[..newline]).unwrap();
    let fields: Vec<&str> = header.splitn(3, ' ').collect();
    assert_eq!(fields[0], "react-docstore.page.v2");
    assert!(fields[1].parse::<u64>().unwrap() > 0, "{header}");
    assert_eq!(fields[2], url);
    assert!(
        entry[newline + 1..] == wikipedia_page("colorado_orogeny_hit.html"),
        "the body is stored as the server sent it"
    );

    // An entry in the JSON form earlier versions wrote is still served.
    let old_url = react_docstore::docstore::search_url(&server.uri(), "Old entry", Profile::Paper);
    let old_entry = serde_json::json!({
        "url": old_url,
        "fetched_at": 1,
        "body": "<p>Served from an old cache entry</p>",
    });
    std::fs::write(cache.path_for(&old_url), old_entry.to_string()).unwrap();
    let offline = DocstoreConfig {
        offline: true,
        ..config
    };
    assert_eq!(
        open(&offline).search("Old entry").await.unwrap(),
        "Served from an old cache entry."
    );
}
