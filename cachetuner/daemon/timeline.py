"""A daemon session as a picture: per target, what Redis held and what the policy did, read from the audit log.

Why from the audit log and not from the in-memory loop: the log is the record of truth (it survives a crash and is
what an operator reads afterwards), so the picture shows exactly what the log says, and the same function draws
any past session of any log. The daemon writes it when the session ends (``timeline-<session>.png`` in its
``state_dir``, and to the session's MLflow run).

Per target, three panels over the session's minutes:
- memory: the ``maxmemory`` in force, the bytes in use and the policy's proposal (MiB; a dry run's proposals are
  all there is), the changes applied, the proposals a guard vetoed, and rollbacks;
- hit ratio of each fresh interval;
- p95 latency of each fresh interval, with the SLO's p95 bound when one is set.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

_MIB = float(1 << 20)


def session_decisions(records: list[dict[str, Any]], session: str) -> dict[str, list[dict[str, Any]]]:
    """The ``decision`` lines of ``session``, by target, in log order."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("session") == session and r.get("phase") == "decision" and r.get("target"):
            out[str(r["target"])].append(r)
    return dict(out)


def _applied(records: list[dict[str, Any]], session: str, target: str) -> list[tuple[float, float, bool]]:
    """(time, maxmemory, a rollback) of each change the session applied to ``target``."""
    return [
        (float(r["t"]), float(r["applied"]["maxmemory"]), r.get("action") == "rollback")
        for r in records
        if r.get("session") == session and r.get("target") == target and r.get("phase") == "outcome"
        and r.get("outcome") == "applied" and isinstance(r.get("applied"), dict) and "t" in r
    ]


def plot_timeline(records: list[dict[str, Any]], session: str, path: str | Path,
                  slo_p95_ms: dict[str, float] | None = None) -> Path | None:
    """Draw ``session``'s timeline to ``path`` (PNG); ``None`` when the session made no decision (nothing to draw).
    ``slo_p95_ms``: each target's p95 bound, drawn as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_target = session_decisions(records, session)
    if not by_target:
        return None
    t0 = min(float(d["t"]) for ds in by_target.values() for d in ds if "t" in d)
    fig, axes = plt.subplots(3, len(by_target), figsize=(7.5 * len(by_target), 8), sharex="col", squeeze=False)
    for col, (target, ds) in enumerate(sorted(by_target.items())):
        mem, hit, p95 = axes[0][col], axes[1][col], axes[2][col]
        t = [(float(d["t"]) - t0) / 60.0 for d in ds]
        fresh = [not (d.get("state") or {}).get("stale", True) for d in ds]
        in_force = [float((d.get("current") or {}).get("maxmemory", float("nan"))) / _MIB for d in ds]
        used = [float((d.get("state") or {}).get("used_memory", float("nan"))) / _MIB for d in ds]
        proposed = [float((d.get("proposal") or {}).get("maxmemory", float("nan"))) / _MIB for d in ds]
        mem.step(t, in_force, where="post", label="maxmemory in force")
        mem.plot(t, proposed, ":", lw=1, label="proposed")
        mem.plot(t, used, lw=1, label="used memory")
        vetoed = [(x, float(d["proposal"]["maxmemory"]) / _MIB) for x, d in zip(t, ds, strict=True)
                  if d.get("action") == "veto" and isinstance(d.get("proposal"), dict)]
        if vetoed:
            mem.scatter(*zip(*vetoed, strict=True), marker="x", color="tab:red", label="proposal vetoed", zorder=3)
        changes = _applied(records, session, target)
        applied = [((x - t0) / 60.0, m / _MIB) for x, m, back in changes if not back]
        rolled = [((x - t0) / 60.0, m / _MIB) for x, m, back in changes if back]
        if applied:
            mem.scatter(*zip(*applied, strict=True), marker="^", color="tab:green", label="applied", zorder=3)
        if rolled:
            mem.scatter(*zip(*rolled, strict=True), marker="v", color="tab:purple", label="rollback", zorder=3)
        mem.set_ylabel("MiB")
        mem.set_title(f"{target}: {len(ds)} decisions, {len(applied)} changes applied, {len(vetoed)} vetoed")
        mem.legend(fontsize=8, loc="best")
        ft = [x for x, ok in zip(t, fresh, strict=True) if ok]
        hit.plot(ft, [float(d["state"]["hit_ratio"]) for d, ok in zip(ds, fresh, strict=True) if ok], ".", ms=3)
        hit.set_ylabel("hit ratio")
        p95.plot(ft, [float(d["state"].get("p95_ms", float("nan"))) for d, ok in zip(ds, fresh, strict=True) if ok],
                 ".", ms=3)
        bound = (slo_p95_ms or {}).get(target)
        if bound:
            p95.axhline(bound, color="tab:red", lw=1, ls="--", label=f"SLO p95 {bound:g} ms")
            p95.legend(fontsize=8, loc="best")
        p95.set_ylabel("p95 ms")
        p95.set_xlabel("minutes since the session started")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


__all__ = ["plot_timeline", "session_decisions"]
