"""Draws the cells of the window audits (seeded, so it reprints the same lines): windows of the long held-out real
traces that no suite, audit, training run or rule's development has read, each with a drawn start, length, request rate
and value-size model. Run from the repository root: ``python experiments/window_draw.py 20261230`` reprints
experiments/suite-window-audit.yaml's traces.

What the earlier suites read (so the regions below are new traffic): ARC P3 only its first 1M requests (512-byte
blocks), ARC P2 its first 5M, orm-night its first 3M except the long-trace suite, which replays all 5M (two cells,
4 KiB values at 100 req/s, `scaled`). ARC P6 is a training trace of the shipped policy (its first 300k), so it is not
drawn."""
import json
import sys

import numpy as np

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 20261230)
S = "../shared/traces/"
# (path, name, format, first request no suite read, requests available, has real sizes, windows)
T = [(S + "arc/P3.lis", "arc-p3", "arc", 1_000_000, 3_912_296, True, 3),
     (S + "arc/P2.lis.zst", "arc-p2", "arc", 5_000_000, 12_729_495, True, 3),
     (S + "cache2k/orm-night.trace.zst", "orm-night", "raw-be-i4", 3_000_000, 5_000_000, False, 2)]
RATES = [10, 30, 100, 300, 1000]
for path, name, fmt, lo, n, real, k in T:
    for _ in range(k):
        limit = int(rng.choice([300_000, 1_000_000]))
        start = int(rng.integers(lo // 1000, (n - limit) // 1000 + 1)) * 1000
        ok = [r for r in RATES if 30 <= limit / r / 10 <= 2000]
        rate = int(rng.choice(ok))
        sizes = ["fixed:4096", "llm", "lognormal:8192,1.0"] + (["real"] if real else [])
        size = str(rng.choice(sizes))
        entry = {"trace": path, "name": f"{name}-{start // 1000}k-{size.split(':')[0]}-{rate}rps",
                 "size_model": None if size == "real" else size, "rate": rate, "format": fmt, "start": start,
                 "limit": limit}
        print("  - " + json.dumps(entry))  # a YAML flow mapping
