//! `mcp`: the binary as a Model Context Protocol server on stdio, driven as a client drives it —
//! initialize, tools/list, tools/call `search` then `lookup` — over a fixture corpus, offline.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::fixture;

/// A client on the binary's stdin and stdout: one JSON-RPC message a line.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Client {
    fn start(profile: &str) -> Client {
        let corpus = fixture("index/pages.jsonl");
        let mut child = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
            .args(["mcp", "--profile", profile, "--docstore"])
            .arg(format!("corpus:{}", corpus.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client { child, stdin, stdout }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line on stdout, which must be a JSON-RPC message.
    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a protocol message: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// A request and its answer's `result`.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.receive();
        assert_eq!(answer["id"], id, "{answer}");
        answer["result"].clone()
    }

    /// A tool call's text.
    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> String {
        let result = self.request(id, "tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{result}");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }

    fn initialize(&mut self) -> Value {
        let result = self.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    /// Closes stdin: the server ends, exit 0, with nothing more on stdout.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert_eq!(rest, "", "stdout carries protocol messages only");
        let output = self.child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        String::from_utf8(output.stderr).unwrap()
    }
}

#[test]
fn an_mcp_client_searches_then_looks_up_on_one_cursor() {
    let mut client = Client::start("default");
    let info = client.initialize();
    assert_eq!(info["serverInfo"]["name"], "react-docstore");
    assert!(info["capabilities"]["tools"].is_object(), "{info}");

    let tools = client.request(2, "tools/list", json!({}));
    let mut names: Vec<(String, Vec<String>)> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let required = tool["inputSchema"]["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect();
            (tool["name"].as_str().unwrap().to_owned(), required)
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("lookup".to_owned(), vec!["keyword".to_owned()]),
            ("search".to_owned(), vec!["query".to_owned()])
        ]
    );

    assert_eq!(
        client.call(3, "lookup", json!({"keyword": "regiment"})),
        "No page is open: Search[entity] first, then Lookup[keyword] in it."
    );
    let found = client.call(4, "search", json!({"query": "Special Air Service"}));
    assert!(
        found.starts_with("The Special Air Service (SAS) is a special forces unit of the British Army."),
        "{found}"
    );
    assert_eq!(
        client.call(5, "lookup", json!({"keyword": "regiment"})),
        "(Result 1 / 1) The SAS was founded in 1941 as a regiment, and later reconstituted as a corps in 1950."
    );
    assert_eq!(
        client.call(6, "lookup", json!({"keyword": "regiment"})),
        "No more results."
    );
    let missed = client.call(7, "search", json!({"query": "special unit"}));
    assert!(
        missed.starts_with("Could not find special unit. Similar: ['Special Air Service'"),
        "{missed}"
    );

    // Arguments that do not fit the schema: an error answer, and the server goes on.
    client.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "search", "arguments": {"entity": "x"}}}));
    let refused = client.receive();
    assert_eq!(refused["id"], 8);
    assert!(
        refused["error"].is_object() || refused["result"]["isError"] == true,
        "{refused}"
    );
    assert_eq!(
        client.call(9, "lookup", json!({"keyword": "regiment"})),
        "(Result 1 / 1) The SAS was founded in 1941 as a regiment, and later reconstituted as a corps in 1950."
    );
    client.finish();
}

#[test]
fn the_paper_profile_keeps_its_cursor_across_a_miss() {
    let mut client = Client::start("paper");
    client.initialize();
    client.call(2, "search", json!({"query": "Special Air Service"}));
    client.call(3, "lookup", json!({"keyword": "regiment"}));
    client.call(4, "search", json!({"query": "special unit"}));
    assert_eq!(
        client.call(5, "lookup", json!({"keyword": "regiment"})),
        "No more results.\n"
    );
    client.finish();
}
