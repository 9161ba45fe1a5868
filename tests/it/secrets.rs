//! Secrets never leave: a secret planted in every place a user can put one — the key flags and
//! their environment variables, `--llm-option` values at any depth, base URLs with credentials
//! (model, Wikipedia, web search), `--tool` commands and their environment, the `serve` state key
//! — and every command that writes run against scripted servers (answering, and refusing with
//! the credentials quoted back in the body and a header), with `RUST_LOG` at its most verbose.
//! Every stream and every file the commands write is then searched for each secret, as it was
//! planted and as HTTP basic auth encodes it.
//!
//! Table-driven: a new flag that takes a secret is one entry of [`planted`], a new command or
//! writer one row of [`cases`]. The test prints the cases it ran.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::{binary, fixture, mock_wikipedia, refused_port, serve_posts};

/// Where a secret is planted, and the secret: every one starts with `PLANTED-`, so that one
/// search finds them all, and each names its place.
fn planted() -> Vec<(&'static str, &'static str)> {
    vec![
        ("--api-key", "PLANTED-api-key-flag-9f2c"),
        ("OPENAI_API_KEY", "PLANTED-api-key-env-4b7d"),
        ("ANTHROPIC_API_KEY", "PLANTED-anthropic-key-env-8d3a"),
        ("--api-key-env MY_KEY", "PLANTED-api-key-env-named-2f6b"),
        ("--serpapi-key", "PLANTED-serpapi-flag-1a8e"),
        ("SERPAPI_API_KEY", "PLANTED-serpapi-env-6c3f"),
        ("--llm-option metadata.api_key", "PLANTED-option-nested-2d9a"),
        (
            "--llm-option vertex_credentials",
            "PLANTED-option-credentials-5e1b",
        ),
        (
            "--llm-option extra_body.items[].token",
            "PLANTED-option-array-8c4d",
        ),
        (
            "--llm-option extra_headers.Authorization",
            "PLANTED-option-header-3f6e",
        ),
        (
            "--llm-option options.Authorization (no secret name)",
            "PLANTED-option-bearer-7a2c",
        ),
        ("--base-url user", "PLANTED-base-user-0b5d"),
        ("--base-url password", "PLANTED-base-password-4e8f"),
        ("--wiki-url password", "PLANTED-wiki-password-9d1a"),
        ("--search-url password", "PLANTED-search-password-2c7b"),
        ("--tool command", "PLANTED-tool-command-6f3e"),
        ("--tool environment", "PLANTED-tool-env-1d9c"),
        ("serve REACT_STATE_KEY", "PLANTED-state-key-env-5b2a"),
        ("serve --state-key-file", "PLANTED-state-key-file-8e4f"),
    ]
}

fn secret(place: &str) -> &'static str {
    planted()
        .into_iter()
        .find(|(name, _)| *name == place)
        .map(|(_, secret)| secret)
        .unwrap()
}

/// What each secret may be found as: itself, and inside an HTTP basic-auth header.
fn forms() -> Vec<(String, String)> {
    let mut forms = Vec::new();
    for (place, secret) in planted() {
        forms.push((place.to_owned(), secret.to_owned()));
    }
    let base = base64::engine::general_purpose::STANDARD;
    let pairs = [
        (
            "--base-url (basic auth)",
            format!("{}:{}", secret("--base-url user"), secret("--base-url password")),
        ),
        (
            "--wiki-url (basic auth)",
            format!("wiki:{}", secret("--wiki-url password")),
        ),
        (
            "--search-url (basic auth)",
            format!("serp:{}", secret("--search-url password")),
        ),
    ];
    for (place, pair) in pairs {
        forms.push((place.to_owned(), base.encode(pair)));
    }
    forms
}

/// The steps the scripted model takes: every tool once, then the answer.
const ACTIONS: [(&str, &str, &str); 5] = [
    ("Search", "search", "Colorado orogeny"),
    ("WebSearch", "web_search", "Denver weather"),
    ("Weather", "weather", "Denver"),
    ("Token", "token", "check"),
    ("Finish", "finish", "Denver"),
];

/// The model server. `--model ok` acts through [`ACTIONS`], thinking first; `--model refuse401`
/// and `--model refuse400` refuse, quoting back every credential the request carried (its
/// `Authorization` headers, basic auth decoded) and the whole request body, in the error body
/// and in a header, as careless servers do.
struct Model;

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let model = body["model"].as_str().unwrap_or_default();
        if let Some(status) = model.strip_prefix("refuse") {
            let quoted = quote_credentials(request);
            let message = format!("Incorrect API key provided: {quoted}; you sent {body}");
            return ResponseTemplate::new(status.parse::<u16>().unwrap())
                .insert_header("www-authenticate", format!("Bearer error=\"{quoted}\"").as_str())
                .insert_header("x-request-echo", quoted.as_str())
                .set_body_json(json!({"error": {"message": message, "param": "api_key"}}));
        }
        if request.url.path().ends_with("/messages") {
            return anthropic_reply(&body);
        }
        let tools = body.get("tools").is_some();
        let step = if tools {
            1 + body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|message| message["role"] == "tool")
                .count()
        } else {
            let prompt = match body.get("prompt") {
                Some(prompt) => prompt.as_str().unwrap().to_owned(),
                None => body["messages"].as_array().unwrap().last().unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            };
            let label = prompt.trim_end().trim_end_matches(':');
            let digits = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            label[label.len() - digits..].parse().unwrap_or(1)
        };
        let (action, function, argument) = ACTIONS[(step - 1).min(ACTIONS.len() - 1)];
        let thought = format!("I use {action} next.");
        let message = if tools {
            let parameter = match function {
                "search" => "entity",
                "web_search" => "query",
                "finish" => "answer",
                _ => "input",
            };
            json!({"role": "assistant", "content": thought, "reasoning_content": "a thought",
                   "tool_calls": [{"id": format!("call_{step}"), "type": "function",
                                   "function": {"name": function,
                                                "arguments": json!({parameter: argument}).to_string()}}]})
        } else {
            let text = format!(" {thought}\nAction {step}: {action}[{argument}]");
            json!({"role": "assistant", "content": text, "reasoning_content": "a thought"})
        };
        let choice = if body.get("prompt").is_some() {
            json!({"index": 0, "text": message["content"], "reasoning_content": "a thought", "finish_reason": "stop"})
        } else {
            json!({"index": 0, "message": message, "finish_reason": "stop"})
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [choice],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }))
    }
}

/// An `ok` reply of Anthropic's Messages API: a thinking block with its signature, the step's
/// text (`--api anthropic`) or its call (`--api anthropic-tools`), the step read as the other
/// APIs' are.
fn anthropic_reply(body: &Value) -> ResponseTemplate {
    let messages = body["messages"].as_array().unwrap();
    let blocks = || {
        messages
            .iter()
            .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
    };
    let tools = body.get("tools").is_some();
    let step = if tools {
        1 + blocks().filter(|block| block["type"] == "tool_result").count()
    } else {
        let prompt: String = blocks()
            .filter_map(|block| block["text"].as_str().map(str::to_owned))
            .collect();
        let label = prompt.trim_end().trim_end_matches(':');
        let digits = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        label[label.len() - digits..].parse().unwrap_or(1)
    };
    let (action, function, argument) = ACTIONS[(step - 1).min(ACTIONS.len() - 1)];
    let thought = format!("I use {action} next.");
    let mut content = vec![json!({"type": "thinking", "thinking": "a thought", "signature": "c2ln"})];
    if tools {
        let parameter = match function {
            "search" => "entity",
            "web_search" => "query",
            "finish" => "answer",
            _ => "input",
        };
        content.push(json!({"type": "text", "text": thought}));
        content.push(
            json!({"type": "tool_use", "id": format!("toolu_{step}"), "name": function,
                            "input": {parameter: argument}}),
        );
    } else {
        content.push(
            json!({"type": "text", "text": format!(" {thought}\nAction {step}: {action}[{argument}]")}),
        );
    }
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": content,
        "stop_reason": if tools { "tool_use" } else { "end_turn" }, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }))
}

/// Every credential a request carried, as a careless server quotes it: each `Authorization`
/// header, basic auth decoded, and Anthropic's `x-api-key`.
fn quote_credentials(request: &Request) -> String {
    request
        .headers
        .get_all("authorization")
        .iter()
        .chain(request.headers.get_all("x-api-key").iter())
        .map(|value| {
            let value = value.to_str().unwrap_or_default();
            match value.strip_prefix("Basic ") {
                Some(encoded) => String::from_utf8_lossy(
                    &base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .unwrap_or_default(),
                )
                .into_owned(),
                None => value.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A SerpApi-compatible service: an answer at `/search`, a refusal quoting the key at `/denied`.
async fn serpapi() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"answer_box": {"answer": "Sunny"}})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/denied"))
        .respond_with(|request: &Request| {
            let query = request.url.query().unwrap_or_default().to_owned();
            ResponseTemplate::new(401)
                .insert_header("x-request-echo", query.as_str())
                .set_body_json(json!({"error": format!("Invalid API key: {query}")}))
        })
        .mount(&server)
        .await;
    server
}

/// `http://{user}:{password}@host:port{path}` for `server`.
fn with_credentials(server: &MockServer, user: &str, password: &str, path: &str) -> String {
    let address = server.address();
    format!("http://{user}:{password}@{address}{path}")
}

/// The servers and the directory every case writes into.
struct World {
    model: MockServer,
    wiki: MockServer,
    serp: MockServer,
    dir: tempfile::TempDir,
}

impl World {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn base_url(&self) -> String {
        with_credentials(
            &self.model,
            secret("--base-url user"),
            secret("--base-url password"),
            "/v1",
        )
    }

    /// The model flags of a run that plants every secret the model takes.
    fn model_args(&self, model: &str) -> Vec<String> {
        let options = [
            format!(
                "metadata={}",
                json!({"api_key": secret("--llm-option metadata.api_key"), "run": "a"})
            ),
            format!("vertex_credentials={}", secret("--llm-option vertex_credentials")),
            format!(
                "extra_body={}",
                json!({"items": [{"token": secret("--llm-option extra_body.items[].token")}, 1]})
            ),
            format!(
                "extra_headers={}",
                json!({"Authorization": format!("Bearer {}", secret("--llm-option extra_headers.Authorization"))})
            ),
            format!(
                "options={}",
                json!({"x": [["Authorization", format!("Bearer {}", secret("--llm-option options.Authorization (no secret name)"))]]})
            ),
        ];
        let mut args = vec![
            "--model".to_owned(),
            model.to_owned(),
            "--base-url".to_owned(),
            self.base_url(),
            "--api-key".to_owned(),
            secret("--api-key").to_owned(),
        ];
        for option in options {
            args.extend(["--llm-option".to_owned(), option]);
        }
        args
    }

    /// The docstore and tool flags that plant every other secret, the page cache in the directory.
    fn tool_args(&self) -> Vec<String> {
        let weather = format!(
            "Weather=echo sunny || curl -s -H 'Authorization: Bearer {}' https://weather.example/api",
            secret("--tool command")
        );
        vec![
            "--wiki-url".to_owned(),
            with_credentials(&self.wiki, "wiki", secret("--wiki-url password"), ""),
            "--cache-dir".to_owned(),
            self.path("pages").display().to_string(),
            "--tools".to_owned(),
            "websearch".to_owned(),
            "--search-url".to_owned(),
            with_credentials(&self.serp, "serp", secret("--search-url password"), "/search"),
            "--serpapi-key".to_owned(),
            secret("--serpapi-key").to_owned(),
            "--tool".to_owned(),
            weather,
            "--tool".to_owned(),
            "Token=test -n \"$TOOL_TOKEN\" && echo token set".to_owned(),
        ]
    }
}

/// An MCP session: initialize, a search Wikipedia answers, one it answers with 404.
const MCP_SESSION: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"Colorado orogeny"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"No such page at all"}}}"#,
    "\n",
);

/// One command the harness runs.
struct Case {
    name: String,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// Environment variables the case runs without.
    unset: Vec<&'static str>,
    stdin: Option<&'static str>,
}

fn case(name: &str, args: Vec<String>) -> Case {
    Case {
        name: name.to_owned(),
        args,
        env: Vec::new(),
        unset: Vec::new(),
        stdin: None,
    }
}

/// `args` with `flag`'s value replaced by `value`.
fn with_flag(mut args: Vec<String>, flag: &str, value: String) -> Vec<String> {
    let idx = args.iter().position(|arg| arg == flag).unwrap();
    args[idx + 1] = value;
    args
}

/// `args` without `--api-key` and its value: the key comes from the environment.
fn without_key_flag(args: Vec<String>) -> Vec<String> {
    args.into_iter()
        .filter(|arg| !arg.contains("PLANTED-api-key-flag") && arg != "--api-key")
        .collect()
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

/// Every command that writes, each with every secret it takes planted. The order matters: later
/// cases read what earlier ones wrote.
fn cases(world: &World) -> Vec<Case> {
    let question = "Which weather has the city east of the Colorado orogeny?".to_owned();
    let path = |name: &str| world.path(name).display().to_string();
    let agent = |command: &str, model: &str, extra: &[&str]| -> Vec<String> {
        let mut args = vec![command.to_owned()];
        args.extend(world.model_args(model));
        args.extend(world.tool_args());
        args.extend(strings(extra));
        args
    };
    let official = fixture("hotpotqa/official.json").display().to_string();
    let eval = |model: &str, out: &str, extra: &[&str]| -> Vec<String> {
        let mut args = agent("eval", model, extra);
        args.extend([official.clone(), "--out".to_owned(), path(out)]);
        args.extend(strings(&[
            "--limit",
            "2",
            &format!("--cache={}", path("replies")),
        ]));
        args
    };
    let with_question = |mut args: Vec<String>| {
        args.push(question.clone());
        args
    };
    let mut cases = vec![
        case(
            "ask, chat API, reply cache, --show-reasoning, --json",
            with_question(agent(
                "ask",
                "ok",
                &[
                    "--show-reasoning",
                    "--json",
                    &format!("--cache={}", path("replies")),
                ],
            )),
        ),
        case(
            "ask, completions API",
            with_question(agent("ask", "ok", &["--api", "completions", "--show-reasoning"])),
        ),
        case(
            "ask, tools API, --json",
            with_question(agent("ask", "ok", &["--api", "tools", "--json"])),
        ),
        // Anthropic's Messages API: the key from `ANTHROPIC_API_KEY`, sent as `x-api-key`.
        case(
            "ask, anthropic API, the key from ANTHROPIC_API_KEY, --json",
            with_question(without_key_flag(agent(
                "ask",
                "ok",
                &["--api", "anthropic", "--json"],
            ))),
        ),
        case(
            "ask, anthropic-tools API, reply cache, --json",
            with_question(agent(
                "ask",
                "ok",
                &[
                    "--api",
                    "anthropic-tools",
                    "--json",
                    &format!("--cache={}", path("replies")),
                ],
            )),
        ),
        Case {
            env: vec![("MY_KEY", secret("--api-key-env MY_KEY").to_owned())],
            ..case(
                "ask, anthropic API refused (401), the key from --api-key-env",
                with_question(without_key_flag(agent(
                    "ask",
                    "refuse401",
                    &["--api", "anthropic", "--api-key-env", "MY_KEY"],
                ))),
            )
        },
        // OpenAI's Responses API: a refusal quoting every credential back, on both of its APIs.
        case(
            "ask, responses API refused (401)",
            with_question(agent("ask", "refuse401", &["--api", "responses"])),
        ),
        case(
            "ask, responses-tools API refused (400), --json",
            with_question(agent("ask", "refuse400", &["--api", "responses-tools", "--json"])),
        ),
        case(
            "ask, anthropic-tools API refused (400)",
            with_question(agent("ask", "refuse400", &["--api", "anthropic-tools"])),
        ),
        Case {
            unset: vec!["ANTHROPIC_API_KEY"],
            ..case(
                "ask, Anthropic's endpoint with credentials but no key",
                with_question(strings(&[
                    "ask",
                    "--api",
                    "anthropic",
                    "--model",
                    "ok",
                    "--base-url",
                    &format!(
                        "https://{}:{}@api.anthropic.com/v1",
                        secret("--base-url user"),
                        secret("--base-url password")
                    ),
                ])),
            )
        },
        case(
            "eval --out, reply cache",
            eval("ok", "results.jsonl", &["--json"]),
        ),
        case(
            "eval --shard 0/2",
            eval("ok", "shard-1.jsonl", &["--shard", "0/2"]),
        ),
        case(
            "eval --shard 1/2",
            eval("ok", "shard-2.jsonl", &["--shard", "1/2"]),
        ),
        case(
            "eval, tools API",
            eval("ok", "tools.jsonl", &["--api", "tools", "--method", "react"]),
        ),
        Case {
            stdin: Some("Which weather has the city east of the Colorado orogeny?\n"),
            ..case(
                "chat --json",
                agent("chat", "ok", &["--json", "--show-reasoning"]),
            )
        },
        case(
            "replay --show-reasoning",
            vec!["replay".into(), path("results.jsonl"), "--show-reasoning".into()],
        ),
        case(
            "replay --json",
            vec!["replay".into(), path("tools.jsonl"), "--json".into()],
        ),
        case(
            "export openai-chat --reasoning keep --with-examples",
            strings(&[
                "export",
                &path("results.jsonl"),
                "--format",
                "openai-chat",
                "--all",
                "--reasoning",
                "keep",
                "--with-examples",
                "--out",
                &path("export-chat.jsonl"),
            ]),
        ),
        case(
            "export sharegpt of a tools run",
            strings(&[
                "export",
                &path("tools.jsonl"),
                "--format",
                "sharegpt",
                "--all",
                "--out",
                &path("export-sharegpt.json"),
            ]),
        ),
        case(
            "report",
            strings(&["report", &path("results.jsonl"), "--out", &path("report.html")]),
        ),
        case(
            "score --json",
            strings(&["score", &path("results.jsonl"), &official, "--json"]),
        ),
        case(
            "merge",
            strings(&[
                "merge",
                &path("shard-1.jsonl"),
                &path("shard-2.jsonl"),
                "--out",
                &path("merged.jsonl"),
            ]),
        ),
        case(
            "compare --json",
            strings(&["compare", &path("results.jsonl"), &path("merged.jsonl"), "--json"]),
        ),
        case("cache info", strings(&["cache", "info", &path("replies")])),
        case(
            "explore with every tool",
            [
                strings(&["explore"]),
                world.tool_args(),
                strings(&[
                    "Search[Colorado orogeny]",
                    "WebSearch[Denver]",
                    "Weather[Denver]",
                    "Token[x]",
                ]),
            ]
            .concat(),
        ),
        // Refusals that quote every credential back, in the body and in a header.
        case(
            "ask, 401 quoting the credentials",
            with_question(agent("ask", "refuse401", &[])),
        ),
        case(
            "ask, 400 quoting the request, tools API",
            with_question(agent("ask", "refuse400", &["--api", "tools"])),
        ),
        case("eval, 401 recorded", eval("refuse401", "refused.jsonl", &[])),
        case(
            "ask, the web search refuses, quoting its key",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--search-url",
                with_credentials(&world.serp, "serp", secret("--search-url password"), "/denied"),
            )),
        ),
        // Servers that cannot be reached, and URLs that cannot be used.
        case(
            "ask, nothing listens at the base URL",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--base-url",
                format!(
                    "http://{}:{}@127.0.0.1:{}/v1",
                    secret("--base-url user"),
                    secret("--base-url password"),
                    refused_port()
                ),
            )),
        ),
        case(
            "ask, a base URL that is no http URL",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--base-url",
                format!(
                    "ftp://{}:{}@example.com/v1",
                    secret("--base-url user"),
                    secret("--base-url password")
                ),
            )),
        ),
        Case {
            unset: vec!["OPENAI_API_KEY"],
            ..case(
                "ask, OpenAI's endpoint with credentials but no key",
                with_question(strings(&[
                    "ask",
                    "--model",
                    "ok",
                    "--base-url",
                    &format!(
                        "https://{}:{}@api.openai.com/v1",
                        secret("--base-url user"),
                        secret("--base-url password")
                    ),
                ])),
            )
        },
        case(
            "ask, a wiki URL that is no http URL",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--wiki-url",
                format!("htp://wiki:{}@example.com", secret("--wiki-url password")),
            )),
        ),
        case(
            "ask, a --tool definition without `=`",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--tool",
                format!(
                    "Weather curl -H 'Authorization: Bearer {}' https://weather.example",
                    secret("--tool command")
                ),
            )),
        ),
        case(
            "ask, a --tool with a bad name",
            with_question(with_flag(
                agent("ask", "ok", &[]),
                "--tool",
                format!(
                    "9Weather=curl -H 'Authorization: Bearer {}' https://weather.example",
                    secret("--tool command")
                ),
            )),
        ),
        case(
            "serve, a wiki URL that is no http URL",
            strings(&[
                "serve",
                "--docstore",
                "wikipedia",
                "--wiki-url",
                &format!("htp://wiki:{}@example.com", secret("--wiki-url password")),
            ]),
        ),
        Case {
            env: vec![("REACT_STATE_KEY", secret("serve REACT_STATE_KEY").to_owned())],
            ..case(
                "serve, a state key too short",
                strings(&["serve", "--docstore", "wikipedia", "--listen", "127.0.0.1:0"]),
            )
        },
        case(
            "serve, a state key file too short",
            strings(&[
                "serve",
                "--docstore",
                "wikipedia",
                "--state-key-file",
                &path("state.key"),
            ]),
        ),
        case(
            "explore, a page Wikipedia does not have (404)",
            [
                strings(&["explore"]),
                world.tool_args(),
                strings(&["Search[No such page at all]"]),
            ]
            .concat(),
        ),
        Case {
            stdin: Some(MCP_SESSION),
            ..case(
                "mcp, a search, and one Wikipedia answers 404",
                strings(&[
                    "mcp",
                    "--docstore",
                    "wikipedia",
                    "--wiki-url",
                    &with_credentials(&world.wiki, "wiki", secret("--wiki-url password"), ""),
                    "--cache-dir",
                    &path("pages"),
                ]),
            )
        },
        case(
            "mcp, a wiki URL that is no http URL",
            strings(&[
                "mcp",
                "--docstore",
                "wikipedia",
                "--wiki-url",
                &format!("htp://wiki:{}@example.com", secret("--wiki-url password")),
            ]),
        ),
    ];
    // The keys from the environment alone, too.
    cases.push(Case {
        args: with_question(
            agent("ask", "ok", &["--json"])
                .into_iter()
                .filter(|arg| !arg.contains("PLANTED-api-key-flag") && arg != "--api-key")
                .filter(|arg| !arg.contains("PLANTED-serpapi-flag") && arg != "--serpapi-key")
                .collect(),
        ),
        ..case("ask, the keys from the environment only", Vec::new())
    });
    cases
}

/// Each secret found in `bytes`, as `{what}: the secret of {place}`.
fn leaks_in(bytes: &[u8], what: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    forms()
        .into_iter()
        .filter(|(_, form)| text.contains(form.as_str()))
        .map(|(place, _)| format!("{what}: the secret of {place}"))
        .collect()
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planted_secret_reaches_no_stream_and_no_file() {
    let world = World {
        model: serve_posts(Model).await,
        wiki: mock_wikipedia().await,
        serp: serpapi().await,
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::write(world.path("state.key"), secret("serve --state-key-file")).unwrap();
    let home = world.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let secret_files = [world.path("state.key")];
    let mut leaks = Vec::new();
    let mut file_leaks = Vec::new();
    let mut outputs = std::collections::HashMap::new();
    for case in cases(&world) {
        let mut command = binary();
        command
            .args(&case.args)
            .current_dir(world.dir.path())
            .env("HOME", &home)
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("OPENAI_API_KEY", secret("OPENAI_API_KEY"))
            .env("ANTHROPIC_API_KEY", secret("ANTHROPIC_API_KEY"))
            .env("SERPAPI_API_KEY", secret("SERPAPI_API_KEY"))
            .env("TOOL_TOKEN", secret("--tool environment"))
            .env("RUST_LOG", "trace")
            .env_remove("REACT_CACHE_DIR")
            .env_remove("REACT_STATE_KEY")
            .stdin(if case.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in &case.env {
            command.env(name, value);
        }
        for name in &case.unset {
            command.env_remove(name);
        }
        let mut child = command.spawn().unwrap();
        if let Some(input) = case.stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let name = &case.name;
        leaks.extend(leaks_in(&output.stdout, &format!("{name}: stdout")));
        leaks.extend(leaks_in(&output.stderr, &format!("{name}: stderr")));
        for file in files_under(world.dir.path()) {
            if secret_files.contains(&file) {
                continue;
            }
            let shown = file.strip_prefix(world.dir.path()).unwrap().display().to_string();
            // A file's leak is reported once, by the first case after which it is there.
            for file_leak in leaks_in(&std::fs::read(&file).unwrap(), &shown) {
                if !file_leaks.contains(&file_leak) {
                    leaks.push(format!("{name}: {file_leak}"));
                    file_leaks.push(file_leak);
                }
            }
        }
        let code = output.status.code();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rfind(|line| !line.trim().is_empty()).unwrap_or("");
        println!(
            "secrets case: {name} (exit {code:?}): {}",
            last.chars().take(200).collect::<String>()
        );
        outputs.insert(case.name.clone(), output);
    }
    for leak in &leaks {
        println!("LEAK {leak}");
    }
    // The commands did what they were asked: runs, caches, pages and exports are there to search.
    for written in [
        "results.jsonl",
        "merged.jsonl",
        "tools.jsonl",
        "refused.jsonl",
        "report.html",
        "export-chat.jsonl",
        "export-sharegpt.json",
    ] {
        assert!(world.path(written).is_file(), "no {written}");
    }
    let results = std::fs::read_to_string(world.path("results.jsonl")).unwrap();
    assert!(results.contains("\"answer\":\"Denver\""), "{results}");
    assert!(
        results.contains("token set") && results.contains("sunny"),
        "{results}"
    );
    assert!(files_under(&world.path("replies")).len() > 1);
    // The errors the refusals and the missing page made are there to search.
    for (name, words) in [
        ("ask, 401 quoting the credentials", "401 Unauthorized"),
        ("explore, a page Wikipedia does not have (404)", "404"),
        ("mcp, a search, and one Wikipedia answers 404", "\"id\":3"),
        ("ask, the web search refuses, quoting its key", "401"),
        (
            "ask, anthropic API, the key from ANTHROPIC_API_KEY, --json",
            "Denver",
        ),
        ("ask, anthropic-tools API, reply cache, --json", "Denver"),
        (
            "ask, anthropic API refused (401), the key from --api-key-env",
            "401 Unauthorized",
        ),
        (
            "ask, Anthropic's endpoint with credentials but no key",
            "needs an API key (`ANTHROPIC_API_KEY`",
        ),
    ] {
        let output = &outputs[name];
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains(words), "{name}: no `{words}` in its output");
    }
    assert!(files_under(&world.path("pages")).len() > 1);
    assert!(
        leaks.is_empty(),
        "{} secrets written:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
