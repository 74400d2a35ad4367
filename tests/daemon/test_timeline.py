"""The session timeline drawn from an audit log (cachetuner.daemon.timeline)."""

from __future__ import annotations

from pathlib import Path

from cachetuner.daemon.timeline import plot_timeline, session_decisions

MIB = 1 << 20


def _decision(session: str, target: str, t: float, limit: int, proposal: int, action: str, stale: bool = False) -> dict:
    return {"session": session, "target": target, "phase": "decision", "t": t, "action": action,
            "state": {"stale": stale, "used_memory": limit - MIB, "hit_ratio": 0.5, "p95_ms": 3.0},
            "current": {"maxmemory": limit}, "proposal": {"maxmemory": proposal}}


def _log() -> list[dict]:
    recs = [{"session": "old", "phase": "event", "event": "start", "t": 0.0},
            _decision("old", "a", 1.0, 64 * MIB, 64 * MIB, "hold")]
    for i in range(6):
        t = 100.0 + 10 * i
        recs.append(_decision("s1", "a", t, (64 + 16 * (i >= 3)) * MIB, 80 * MIB, "change" if i == 2 else "hold"))
        recs.append(_decision("s1", "b", t, 32 * MIB, 300 * MIB, "veto", stale=i == 0))
    recs.append({"session": "s1", "target": "a", "phase": "outcome", "t": 125.0, "outcome": "applied",
                 "action": "change", "applied": {"maxmemory": 80 * MIB}})
    return recs


def test_decisions_are_the_sessions_own_by_target() -> None:
    by = session_decisions(_log(), "s1")
    assert sorted(by) == ["a", "b"]
    assert len(by["a"]) == len(by["b"]) == 6  # the older session's decision is not this one's
    assert session_decisions(_log(), "nobody") == {}


def test_the_timeline_is_drawn_per_target(tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    out = plot_timeline(_log(), "s1", tmp_path / "t.png", slo_p95_ms={"a": 50.0})
    assert out == tmp_path / "t.png"
    img = mpimg.imread(out)
    assert img.shape[1] > img.shape[0]  # two targets side by side: wider than tall
    assert plot_timeline(_log(), "nobody", tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()
