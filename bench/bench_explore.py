#!/usr/bin/env python3
"""Search through the command line, as issue 14 measures it: `explore --docstore index:DIR --json`
reading `Search[...]` actions on stdin, the exact titles of a gen_wiki queries file in one run and
its one-typo titles in another (best of REPEAT runs, 3 unless given), the start-up (an empty stdin)
subtracted; per action, wall-clock and CPU time of the process (user + system), and how many
one-typo titles found their page among the five Similar titles. Prints one JSON line.

    python3 bench/bench_explore.py target/release/react-docstore /tmp/wiki-200k.index \
        /tmp/wiki-200k.queries.tsv [REPEAT]
"""
import subprocess, sys, time, json, resource

binary, index, queries = sys.argv[1:4]
repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
rows = [line.rstrip("\n").split("\t") for line in open(queries, encoding="utf-8") if "\t" in line]
exact = "".join(f"Search[{q}]\n" for q, t in rows if q == t).encode()
typo_rows = [(q, t) for q, t in rows if q != t]
typo = "".join(f"Search[{q}]\n" for q, t in typo_rows).encode()

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run(stdin):
    best, best_cpu, out = None, None, b""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu()
        out = subprocess.run([binary, "explore", "--docstore", f"index:{index}", "--json"],
                             input=stdin, capture_output=True, check=True).stdout
        dt, dc = time.perf_counter() - t0, cpu() - c0
        best = dt if best is None else min(best, dt)
        best_cpu = dc if best_cpu is None else min(best_cpu, dc)
    return best, best_cpu, out

base, base_cpu, _ = run(b"")
t_exact, c_exact, _ = run(exact)
t_typo, c_typo, out = run(typo)
n_exact, n_typo = exact.count(b"\n"), typo.count(b"\n")
found = 0
for (q, t), line in zip(typo_rows, out.decode().splitlines()):
    obs = json.loads(line)["observation"]
    similar = obs.split(". Similar: ", 1)[1] if ". Similar: " in obs else ""
    found += f"'{t}'" in similar or f'"{t}"' in similar
ms_exact = 1000 * (t_exact - base) / n_exact
ms_typo = 1000 * (t_typo - base) / n_typo
cpu_exact = 1000 * (c_exact - base_cpu) / n_exact
cpu_typo = 1000 * (c_typo - base_cpu) / n_typo
print(json.dumps({"index": index, "startup_s": round(base, 3), "exact_ms": round(ms_exact, 3),
                  "typo_ms": round(ms_typo, 3), "mean_ms": round((ms_exact * n_exact + ms_typo * n_typo) / (n_exact + n_typo), 3),
                  "cpu_exact_ms": round(cpu_exact, 3), "cpu_typo_ms": round(cpu_typo, 3),
                  "cpu_mean_ms": round((cpu_exact * n_exact + cpu_typo * n_typo) / (n_exact + n_typo), 3),
                  "typo_in_similar": f"{found}/{n_typo}"}))
