"""Draws the cells of the audit suites (seeded, so it reprints the same lines): every held-out shared real trace with a
drawn request rate, value-size model and, over 1M requests, prefix. Run from the repository root:
``python experiments/audit_draw.py`` reprints experiments/suite-audit.yaml's traces (seed 20261203),
``python experiments/audit_draw.py 20261204`` those of experiments/suite-audit-2.yaml. A second argument, the decision
interval in seconds (default 10), draws rates whose episodes last 30-2,000 intervals of that length (the interval
audits, experiments/suite-interval-audit-*.yaml); at 10 it draws exactly as before. A third and fourth argument, the
shortest and longest episode in intervals (default 30 and 2,000), draw long episodes instead (the long audits,
experiments/suite-long-audit-*.yaml: slow streams over hours, which the default range never draws at 10 s)."""
import json
import sys

import numpy as np

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 20261203)
INTERVAL = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
SHORTEST = int(sys.argv[3]) if len(sys.argv) > 3 else 30
LONGEST = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
S = "../shared/traces/"
# (path, name, format, requests available, has real sizes)
T = [(S + "cloudphysics/cloudPhysicsIO.csv", "cloudphysics", None, 113_872, True),
     (S + "cache2k/orm-night.trace.zst", "orm-night", "raw-be-i4", 5_000_000, False),
     (S + "cache2k/web12.trace", "web12", "raw-be-i4", 95_607, False),
     (S + "arc/P3.lis", "arc-p3", "arc", 3_912_296, True),
     (S + "arc/P2.lis.zst", "arc-p2", "arc", 12_729_495, True),
     (S + "corda/trace_vaultservice.trace", "corda", "raw-be-i8", 135_702, False)] + \
    [(S + f"lirs/{n}.trace", f"lirs-{n}", "lirs", c, False) for n, c in
     [("cpp", 9047), ("cs", 6781), ("gli", 6016), ("multi1", 15858), ("multi3", 30241), ("ps", 10448), ("sprite", 133996)]]
RATES = [10, 30, 100, 300, 1000]
for path, name, fmt, n, real in T:
    limit = None
    if n > 1_000_000:
        limit = int(rng.choice([300_000, 1_000_000]))
    m = limit or n
    ok = [r for r in RATES if SHORTEST <= m / r / INTERVAL <= LONGEST]
    if not ok:  # a short trace at a long interval (the LIRS traces at 30-60 s): left out, said in the output
        print(f"  # {name}: no rate gives {SHORTEST:,}-{LONGEST:,} intervals of {INTERVAL:g} s")
        continue
    rate = int(rng.choice(ok))
    sizes = ["fixed:4096", "llm", "lognormal:8192,1.0"] + (["real"] if real else [])
    size = str(rng.choice(sizes))
    entry = {"trace": path, "name": f"{name}-{size.split(':')[0]}-{rate}rps", "size_model": None if size == "real" else size, "rate": rate}
    if fmt:
        entry["format"] = fmt
    if limit:
        entry["limit"] = limit
    print("  - " + json.dumps(entry))  # a YAML flow mapping
