#!/usr/bin/env python3
"""The bm25s baseline (the retriever DSPy's tutorials use) on a gen_wiki corpus.

    python3 -m venv .venv-bm25s && .venv-bm25s/bin/pip install bm25s==0.3.16
    cargo run --release --bin gen_wiki -- --pages 200000 --out /tmp/wiki-200k.jsonl \
        --queries /tmp/wiki-200k.queries.tsv --seed 1
    .venv-bm25s/bin/python bench/bm25s_baseline.py /tmp/wiki-200k.jsonl /tmp/wiki-200k.queries.tsv

Indexing is timed end to end from the file: read the JSON Lines (HotpotQA abstracts shape),
build each document as `title + " | " + " ".join(text)` as DSPy does, `bm25s.tokenize(corpus,
stopwords="en")`, `bm25s.BM25().index(tokens)`. Then every query of the TSV (`query<TAB>expected
title`) is run alone, `retriever.retrieve(bm25s.tokenize(q), k=5)`, and timed (tokenizing the
query included). A hit is the expected title among the 5 results. Prints one JSON line.
"""

import argparse
import json
import math
import resource
import sys
import time

import bm25s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", help="JSON Lines with title and text (list of sentences)")
    ap.add_argument("queries", help="TSV: query<TAB>expected title")
    ap.add_argument("--k", type=int, default=5, help="results per query (default 5)")
    args = ap.parse_args()

    start = time.perf_counter()
    titles, corpus = [], []
    with open(args.corpus, encoding="utf-8") as f:
        for line in f:
            page = json.loads(line)
            titles.append(page["title"])
            corpus.append(page["title"] + " | " + " ".join(page["text"]))
    read_done = time.perf_counter()
    tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
    tokenize_done = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    index_done = time.perf_counter()
    del tokens
    index_seconds = index_done - start

    queries = []
    with open(args.queries, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                query, expected = line.split("\t", 1)
                queries.append((query, expected))

    k = min(args.k, len(titles))
    latencies, hits = [], []
    for query, expected in queries:
        t0 = time.perf_counter()
        docs, _scores = retriever.retrieve(bm25s.tokenize(query, show_progress=False), k=k, show_progress=False)
        latencies.append(time.perf_counter() - t0)
        hits.append(expected in {titles[i] for i in docs[0]})

    def rate(selected):
        return round(sum(selected) / len(selected), 4) if selected else None

    exact = [h for (q, e), h in zip(queries, hits) if q == e]
    typo = [h for (q, e), h in zip(queries, hits) if q != e]
    ordered = sorted(latencies)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] if ordered else None
    figures = {
        "tool": "bm25s",
        "bm25s_version": getattr(bm25s, "__version__", "unknown"),
        "python": sys.version.split()[0],
        "corpus": args.corpus,
        "pages": len(titles),
        "index_seconds": round(index_seconds, 3),
        "index_pages_per_second": round(len(titles) / index_seconds, 1),
        "read_seconds": round(read_done - start, 3),
        "tokenize_seconds": round(tokenize_done - read_done, 3),
        "bm25_index_seconds": round(index_done - tokenize_done, 3),
        "queries": len(queries),
        "k": k,
        "query_mean_ms": round(1000 * sum(latencies) / len(latencies), 3) if latencies else None,
        "query_p99_ms": round(1000 * p99, 3) if p99 is not None else None,
        "hit_rate": rate(hits),
        "hit_rate_exact": rate(exact),
        "hit_rate_typo": rate(typo),
        # ru_maxrss is in KiB on Linux.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
