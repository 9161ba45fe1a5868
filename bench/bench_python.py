#!/usr/bin/env python3
"""Search from Python (issue 37): N `search` calls of the package's explorer on an index, against
the same searches two threads at a time, and through `react-docstore serve` over HTTP (one
kept-alive connection, `POST /v1/step`). Prints one JSON line; docs/python.md, "Speed".

    cargo run --release --bin gen_wiki -- --pages 200000 --out /tmp/wiki-200k.jsonl \\
        --queries /tmp/wiki-200k.queries.tsv --num-queries 10000 --seed 1
    pip install .                       # a release build of the package
    react-docstore index build /tmp/wiki-200k.jsonl --out /tmp/wiki-200k.index
    python bench/bench_python.py /tmp/wiki-200k.index /tmp/wiki-200k.queries.tsv [N]

Every figure is the best of 3 runs (the machine is shared); the CPU time is the searching thread's
(`time.thread_time`), what `bench_index` reports as "search CPU time". A search is `explorer.search(query)`
with the `default` profile, the call `bench_index --search-only` times in Rust; each run opens a
new explorer. The observations of the HTTP runs are checked equal to the in-process ones.
"""

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

import react_docstore

REPEAT = 3


def best_of(run):
    return min(run() for _ in range(REPEAT))


def one_thread(docstore, queries):
    """Wall and CPU time (of the calling thread, which runs the search) of the searches."""

    def run():
        explorer = docstore.explorer()
        started, cpu_started = time.perf_counter(), time.thread_time()
        for query in queries:
            explorer.search(query)
        return time.perf_counter() - started, time.thread_time() - cpu_started

    runs = [run() for _ in range(REPEAT)]
    return min(wall for wall, _ in runs), min(cpu for _, cpu in runs)


def threads(docstore, queries, count):
    """`count` threads, each its own explorer and all of `queries`: the wall time of the lot."""

    def run():
        barrier = threading.Barrier(count + 1)

        def work():
            explorer = docstore.explorer()
            barrier.wait()
            for query in queries:
                explorer.search(query)

        workers = [threading.Thread(target=work) for _ in range(count)]
        for worker in workers:
            worker.start()
        barrier.wait()
        started = time.perf_counter()
        for worker in workers:
            worker.join()
        return time.perf_counter() - started

    return best_of(run)


def serve(index, queries, expected):
    process = subprocess.Popen(
        ["react-docstore", "serve", "--docstore", f"index:{index}", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REACT_STATE_KEY": "k" * 32},
    )
    try:
        line = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            raise SystemExit(f"serve did not start: {line}")
        connection = http.client.HTTPConnection("127.0.0.1", int(match.group(1)))
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}

        def step(query):
            body = json.dumps({"action": f"Search[{query}]", "state": None})
            connection.request("POST", "/v1/step", body, headers)
            response = connection.getresponse()
            return json.loads(response.read())["observation"]

        for query, observation in zip(queries[:200], expected):
            if step(query) != observation:
                raise SystemExit(f"serve answered `{query}` otherwise than the explorer")

        def run():
            started = time.perf_counter()
            for query in queries:
                step(query)
            return time.perf_counter() - started

        return best_of(run)
    finally:
        process.terminate()
        process.wait()


def main():
    index, queries_file = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    rows = [line.split("\t")[0] for line in open(queries_file, encoding="utf-8") if "\t" in line]
    queries = (rows * (n // max(len(rows), 1) + 1))[:n]
    started = time.perf_counter()
    docstore = react_docstore.Docstore(f"index:{index}")
    open_s = time.perf_counter() - started
    warm = docstore.explorer()
    expected = [warm.search(query) for query in queries]  # warms the page cache as bench_index does
    single, single_cpu = one_thread(docstore, queries)
    double = threads(docstore, queries, 2)
    http_s = serve(index, queries, expected[:200])
    with open("/proc/loadavg", encoding="ascii") as loadavg:
        load = loadavg.read().split()[:3]
    print(
        json.dumps(
            {
                "searches": n,
                "open_ms": round(open_s * 1000, 1),
                "in_process_us_per_search": round(single / n * 1e6, 1),
                "in_process_cpu_us_per_search": round(single_cpu / n * 1e6, 1),
                "in_process_searches_per_s": round(n / single),
                "two_threads_searches_per_s": round(2 * n / double),
                "two_threads_speedup": round(single * 2 / double, 2),
                "http_us_per_search": round(http_s / n * 1e6, 1),
                "in_process_over_http": round(http_s / single, 2),
                "loadavg": load,
            }
        )
    )


if __name__ == "__main__":
    main()
