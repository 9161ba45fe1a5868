"""The module's API beside the observations: errors, threads, tools, metrics, results files."""

from __future__ import annotations

import http.server
import inspect
import json
import subprocess
import threading
import typing

import pytest

import react_docstore
from react_docstore import metrics

from conftest import REPO

RESULTS = REPO / "fixtures/docstore/hotpotqa-distractor-3.results.jsonl"


def cli_error(cli: str, *args: str) -> str:
    """The message the command line prints for `args` (after `error: `), checking it exits 2."""
    done = subprocess.run([cli, *args], capture_output=True)
    assert done.returncode == 2, done
    stderr = done.stderr.decode("utf-8")
    assert stderr.startswith("error: "), stderr
    return stderr[len("error: ") :].rstrip("\n")


# --- errors ---


def test_a_missing_index_is_not_found_with_the_command_line_message(cli, tmp_path):
    missing = tmp_path / "no-index"
    with pytest.raises(react_docstore.NotFoundError) as raised:
        react_docstore.Docstore(f"index:{missing}")
    assert str(raised.value) == cli_error(cli, "explore", "--docstore", f"index:{missing}", "Search[x]")


def test_a_missing_corpus_file_is_not_found_with_the_command_line_message(cli, tmp_path):
    missing = tmp_path / "none.jsonl"
    with pytest.raises(react_docstore.NotFoundError) as raised:
        react_docstore.Docstore(f"corpus:{missing}")
    assert str(raised.value) == cli_error(cli, "explore", "--docstore", f"corpus:{missing}", "Search[x]")


def test_a_malformed_corpus_file_is_an_io_error_naming_its_line(cli, tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"title": "A", "text": "a."}\n{"title": 3}\n', encoding="utf-8")
    with pytest.raises(react_docstore.DocstoreIOError) as raised:
        react_docstore.Docstore(f"corpus:{corpus}")
    assert str(raised.value) == cli_error(cli, "explore", "--docstore", f"corpus:{corpus}", "Search[x]")
    assert str(corpus) in str(raised.value)


def test_a_directory_that_is_no_index_is_an_io_error(cli, tmp_path):
    (tmp_path / "something").write_text("x", encoding="utf-8")
    with pytest.raises(react_docstore.DocstoreIOError) as raised:
        react_docstore.Docstore(f"index:{tmp_path}")
    assert str(raised.value) == cli_error(cli, "explore", "--docstore", f"index:{tmp_path}", "Search[x]")


@pytest.mark.parametrize("spec", ["wiki", "index:", "corpus:", "", "distractor"])
def test_a_bad_spec_is_a_spec_error(spec):
    with pytest.raises(react_docstore.SpecError) as raised:
        react_docstore.Docstore(spec)
    assert f"`{spec}`" in str(raised.value) or "distractor" in str(raised.value)


def test_a_bad_profile_and_wiki_url_are_spec_errors():
    with pytest.raises(react_docstore.SpecError, match="unknown profile `Paper`"):
        react_docstore.Docstore("wikipedia", profile="Paper")
    with pytest.raises(react_docstore.SpecError, match="invalid wiki URL `ftp://x`"):
        react_docstore.Docstore("wikipedia", wiki_url="ftp://x")


def test_offline_without_the_page_cached_is_an_offline_error(cli, empty_cache):
    explorer = react_docstore.Docstore("wikipedia", offline=True, cache_dir=empty_cache).explorer()
    with pytest.raises(react_docstore.OfflineError) as raised:
        explorer.search("Colorado orogeny")
    expected = cli_error(
        cli, "explore", "--offline", "--cache-dir", str(empty_cache), "Search[Colorado orogeny]"
    )
    assert str(raised.value) == expected
    # The explorer goes on after a failed search.
    assert explorer.step("Finish[x]") == "Episode finished."


def test_an_unreachable_wiki_is_a_network_error(empty_cache):
    # A port nothing listens on, on loopback: refused at once, no network touched.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    docstore = react_docstore.Docstore("wikipedia", cache_dir=empty_cache, wiki_url=f"http://127.0.0.1:{port}")
    with pytest.raises(react_docstore.NetworkError, match="cannot reach Wikipedia"):
        docstore.explorer().search("Colorado orogeny")


def test_every_error_is_a_docstore_error():
    for name in ("SpecError", "NotFoundError", "OfflineError", "NetworkError", "DocstoreIOError"):
        assert issubclass(getattr(react_docstore, name), react_docstore.DocstoreError)
    assert issubclass(react_docstore.DocstoreError, Exception)


ODD_INPUTS = ["", " ", "]", "[", "Search[", "Lookup[]", "\x00", "a\x00b", "Search[\x00]", "é" * 10_000,
              "Search[" + "x" * 100_000 + "]", "Lookup[" + "(" * 50 + "]", "\u202e\ufeff", "Search[*?~^]",
              "Search[\"unclosed]", "Search[a:b AND OR NOT]", "Lookup[\\]", "Search[\\]"]


@pytest.mark.parametrize("profile", ["paper", "default"])
def test_odd_input_never_panics(index_dir, profile):
    explorer = react_docstore.Docstore(f"index:{index_dir}", profile=profile).explorer()
    for text in ODD_INPUTS:
        assert isinstance(explorer.step(text), str)
        assert isinstance(explorer.search(text), str)
        assert isinstance(explorer.lookup(text), str)
    for bad in ["\ud800", "Search[\udfff]"]:
        with pytest.raises(UnicodeEncodeError):
            explorer.step(bad)


def test_odd_specs_never_panic(tmp_path):
    for spec in ["index:\x00", "corpus:\x00", "index:" + "a/" * 5000, f"corpus:{tmp_path}", f"index:{tmp_path}/x\ny"]:
        with pytest.raises(react_docstore.DocstoreError):
            react_docstore.Docstore(spec)


# --- threads ---


def test_threads_each_with_an_explorer_see_what_one_thread_sees(index_dir, pages_file):
    docstore = react_docstore.Docstore(f"index:{index_dir}", profile="paper")
    titles = [json.loads(line)["title"] for line in pages_file.read_text(encoding="utf-8").splitlines()]
    actions = []
    for title in titles:
        actions += [f"Search[{title.lower()}]", "Lookup[the]", "Lookup[the]"]

    def run(explorer):
        return [explorer.step(action) for action in actions]

    expected = run(docstore.explorer())
    results = [None] * 4

    def worker(slot):
        results[slot] = run(docstore.explorer())

    threads = [threading.Thread(target=worker, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4


def test_one_explorer_shared_by_threads_takes_the_calls_in_turn(index_dir):
    explorer = react_docstore.Docstore(f"index:{index_dir}").explorer()
    errors = []

    def worker():
        try:
            for _ in range(50):
                assert isinstance(explorer.search("Mercury (planet)"), str)
                assert isinstance(explorer.lookup("Sun"), str)
        except BaseException as error:  # noqa: BLE001 - the test reports any failure
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_search_releases_the_gil(empty_cache):
    """The wiki a search reads is served by a Python thread of this very process: the search can
    only get its page if the GIL is released while it waits."""
    page = (REPO / "fixtures/wikipedia/colorado_orogeny_hit.html").read_bytes()
    expected = (REPO / "fixtures/wikipedia/colorado_orogeny_hit.paper-observation.txt").read_text(encoding="utf-8")

    class Wiki(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the handler's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Wiki)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        docstore = react_docstore.Docstore(
            "wikipedia",
            profile="paper",
            cache_dir=empty_cache,
            wiki_url=f"http://127.0.0.1:{server.server_address[1]}",
        )
        assert docstore.explorer().search("Colorado orogeny") == expected.rstrip("\n")
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


# --- tools ---


def test_tools_are_plain_typed_functions_named_search_and_lookup(index_dir):
    search, lookup = react_docstore.Docstore(f"index:{index_dir}").tools()
    assert (search.__name__, lookup.__name__) == ("search", "lookup")
    assert str(inspect.signature(search)) == "(entity: str) -> str"
    assert str(inspect.signature(lookup)) == "(keyword: str) -> str"
    assert typing.get_type_hints(search) == {"entity": str, "return": str}
    assert typing.get_type_hints(lookup) == {"keyword": str, "return": str}
    assert "Search" in search.__doc__ and "keyword" in lookup.__doc__
    assert inspect.isfunction(search) and inspect.isfunction(lookup)


def test_each_tools_call_has_its_own_explorer(index_dir):
    docstore = react_docstore.Docstore(f"index:{index_dir}")
    explorer = docstore.explorer()
    search, lookup = docstore.tools()
    other_search, other_lookup = docstore.tools()
    assert search("Jaguar Cars") == explorer.search("Jaguar Cars")
    assert lookup("founded") == explorer.lookup("founded")
    assert not other_lookup("founded").startswith("(Result")
    assert other_search("Jaguar Cars") == search("Jaguar Cars")


# --- metrics ---


@pytest.mark.parametrize(
    "prediction, gold, em, f1",
    [
        ("The Eiffel Tower!", "eiffel tower", True, 1.0),
        ("Paris, France", "Paris", False, 2 / 3),
        ("yes", "no", False, 0.0),
        ("noanswer", "noanswer", True, 1.0),
        ("", "Paris", False, 0.0),
        ("a an the", "the", True, 0.0),
    ],
)
def test_metrics_are_the_official_hotpotqa_ones(prediction, gold, em, f1):
    assert metrics.exact_match(prediction, gold) is em
    assert metrics.f1(prediction, gold) == pytest.approx(f1)


def test_metrics_agree_with_the_recorded_scores():
    for run in react_docstore.read_results(RESULTS):
        assert metrics.exact_match(run["answer"], run["gold"]) == run["em"]
        assert metrics.f1(run["answer"], run["gold"]) == pytest.approx(run["f1"])


# --- read_results ---


def test_read_results_reads_files_directories_and_comma_lists(tmp_path):
    line = RESULTS.read_text(encoding="utf-8")
    (tmp_path / "shards" / "deep").mkdir(parents=True)
    (tmp_path / "shards" / "a.jsonl").write_text(line, encoding="utf-8")
    (tmp_path / "shards" / "deep" / "b.jsonl").write_text(line + line, encoding="utf-8")
    (tmp_path / "shards" / "notes.txt").write_text("not a results file", encoding="utf-8")
    one = list(react_docstore.read_results(RESULTS))
    recorded = json.loads(line)
    assert len(one) == 1
    assert {key: one[0][key] for key in ("id", "question", "answer", "gold", "em", "steps")} == {
        key: recorded[key] for key in ("id", "question", "answer", "gold", "em", "steps")
    }
    # One evaluation, as `score` reads it: a run in two files is kept once, and said so.
    with pytest.warns(UserWarning, match="each is kept once"):
        assert len(list(react_docstore.read_results(tmp_path / "shards"))) == 1
    with pytest.warns(UserWarning, match="each is kept once"):
        assert len(list(react_docstore.read_results(f"{RESULTS},{RESULTS}"))) == 1
    with pytest.warns(UserWarning, match="each is kept once"):
        assert len(list(react_docstore.read_results([RESULTS, str(tmp_path / "shards")]))) == 1


def test_read_results_refuses_two_answers_to_one_question(tmp_path):
    line = json.loads(RESULTS.read_text(encoding="utf-8").splitlines()[0])
    other = dict(line, answer="another answer")
    (tmp_path / "a.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps(other) + "\n", encoding="utf-8")
    with pytest.raises(react_docstore.ResultsError) as raised:
        list(react_docstore.read_results(tmp_path))
    assert "a.jsonl" in str(raised.value) and "b.jsonl" in str(raised.value)


def test_read_results_errors_name_the_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(RESULTS.read_text(encoding="utf-8") + '{"id": "q2", "steps": [}\n', encoding="utf-8")
    with pytest.raises(react_docstore.ResultsError) as raised:
        list(react_docstore.read_results(bad))
    assert f"`{bad}`, line 2" in str(raised.value)
    # `score` of a directory holding it says the same.
    assert str(raised.value) == cli_error(cli, "score", str(tmp_path), str(REPO / "fixtures/docstore/hotpotqa-distractor-3.json"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(react_docstore.ResultsError, match="holds no results file"):
        list(react_docstore.read_results(empty))
