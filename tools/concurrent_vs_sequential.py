#!/usr/bin/env python3
"""Does running latency-bound experiments side by side move what they measure?

    tools/concurrent_vs_sequential.py data/<sequential-run> data/<concurrent-run>

For every cell of every latency-bound experiment present in both runs, a
two-sided Mann-Whitney U test of its primary metric (one value per trial)
between the sequential run (--parallel 1) and the concurrent one
(--parallel N). Exact p from the permutation distribution of U when it has at
most 200,000 arrangements, else the normal approximation with the tie
correction. Prints one line per cell and the cells with p < 0.05; a cell that
moves should run alone (declare its experiment cpu-bound in its registry
entry). Standard library only.
"""
import csv, io, itertools, math, sys
from collections import defaultdict
from pathlib import Path

# experiment -> (table, metric column); the claim's own quantity where one row is one trial.
PRIMARY = {
    # Only its delayed cells run in lanes (its rtt0 cells run alone in both).
    "concurrency": ("concurrency", "admitted"),
    "retries": ("retries", "admitted"),
    "bursts": ("bursts", "max_in_window"),
    "skew": ("skew", "admitted"),
    "replication": ("replication", "mismatches"),
    "script-survival": ("script-survival", "ok"),
    "cluster": ("cluster", "fraction_ok|admitted"),
    "fail-open": ("fail-open-summary", "outage_admitted"),
    "failover": ("failover", "over_admitted"),
}


def read(run: Path, table: str):
    for name in (f"{table}.csv", f"{table}.csv.zst"):
        p = run / name
        if p.exists():
            if name.endswith(".zst"):
                import subprocess
                text = subprocess.run(["zstd", "-dc", str(p)], capture_output=True, check=True).stdout.decode()
            else:
                text = p.read_text()
            return list(csv.DictReader(io.StringIO(text)))
    return []


def values(rows, metric):
    """cell -> per-trial values (a trial with several rows: their mean)."""
    per = defaultdict(list)
    for r in rows:
        v = None
        for m in metric.split("|"):
            x = r.get(m, "")
            if x not in ("", None):
                v = 1.0 if x == "true" else 0.0 if x == "false" else float(x)
                break
        if v is not None:
            per[(r["cell"], r["trial"])].append(v)
    out = defaultdict(list)
    for (cell, _), vs in per.items():
        out[cell].append(sum(vs) / len(vs))
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def mann_whitney(a, b):
    n1, n2 = len(a), len(b)
    allv = a + b
    r = ranks(allv)
    u = sum(r[:n1]) - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    if math.comb(n1 + n2, n1) <= 200_000:
        # Exact: U over every split of the pooled ranks.
        extreme = 0
        total = 0
        for idx in itertools.combinations(range(n1 + n2), n1):
            uu = sum(r[i] for i in idx) - n1 * (n1 + 1) / 2
            total += 1
            if abs(uu - mu) >= abs(u - mu) - 1e-9:
                extreme += 1
        return u, extreme / total
    ties = defaultdict(int)
    for v in allv:
        ties[v] += 1
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - sum(t**3 - t for t in ties.values()) / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return u, math.erfc(z / math.sqrt(2))


def main():
    seq, par = Path(sys.argv[1]), Path(sys.argv[2])
    moved, tested, untestable = [], 0, 0
    for exp, (table, metric) in PRIMARY.items():
        a_rows, b_rows = read(seq, table), read(par, table)
        if not a_rows or not b_rows:
            continue
        a, b = values(a_rows, metric), values(b_rows, metric)
        for cell in sorted(set(a) & set(b)):
            x, y = a[cell], b[cell]
            if len(x) < 3 or len(y) < 3:
                untestable += 1
                continue
            if len(set(x + y)) == 1:
                p = 1.0
                u = len(x) * len(y) / 2
            else:
                u, p = mann_whitney(x, y)
            tested += 1
            mean = lambda v: sum(v) / len(v)
            print(f"{exp:16} {cell[:60]:60} n={len(x)}/{len(y)} seq={mean(x):10.3f} par={mean(y):10.3f} U={u:6.1f} p={p:.3f}")
            if p < 0.05:
                moved.append((exp, cell, p))
    print(f"\n{tested} cells tested ({untestable} with fewer than 3 trials in a run not tested); p < 0.05 in {len(moved)}:")
    for exp, cell, p in moved:
        print(f"  {exp} {cell} p={p:.4f}")
    print(f"(at 0.05, about {0.05 * tested:.1f} of {tested} cells would show p < 0.05 with no effect at all)")


if __name__ == "__main__":
    main()
