"""The ``mrc`` rule's state across daemon restarts: its miss-ratio curves and the decider, saved to ``state_dir``.
For ``ppo``, whose decisions are offsets from the mirror env's *anchor* (the same rule, ``env.mrc.anchor``), the
curves and the anchor's rule are saved instead: the policy network itself has no state that outlives an interval.

Why: the curves take hundreds of sampled GETs to be ready, and until then ``mrc`` runs its cold phase, whose rules
are bets made without evidence (cold growth, cold free growth, the cold memory bound). A daemon restarted after a
deploy, a crash or ``kill -9`` would otherwise place those bets again on a cache that has been tuned for weeks. The
evaluation measures what warm curves are worth (README "Against an operator with history": ``mrc`` that watched
the past against ``mrc`` cold). So every ``policy.checkpoint_intervals`` decisions, and at shutdown, the daemon
pickles the mirror env's estimator and the controller; a daemon started with the same policy, rule settings, curve
settings, bounds, interval, history and code resumes from them instead of starting cold. Anything else (another
policy, new bounds, a deploy that changed the rule's or the curves' code, an unreadable file) starts cold and says
why in the log.

The file is a pickle the daemon wrote into its own ``state_dir``; like ``state.json`` it must not be writable by
anyone the daemon does not trust.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachetuner.control.learned import LearnedPolicy
from cachetuner.control.mrc import MRCController

log = logging.getLogger("cachetuner.daemon")

#: bump when what is pickled changes shape (2: a dict of named parts, so that ``ppo`` saves its anchor)
VERSION = 2


@dataclass
class Checkpoint:
    """Where one target's policy state goes, how often, and what it must match to be resumed."""

    path: Path
    every: int
    key: str  # JSON of the policy name, the rule's settings, the curves' settings and the bounds

    def load(self) -> dict[str, Any] | None:
        """The saved parts (``estimator`` and ``controller``, or ``estimator`` and ``anchor`` for ``ppo``) if the file
        exists and was written for the same key; else None."""
        if not self.path.is_file():
            return None
        try:
            with self.path.open("rb") as f:
                data = pickle.load(f)
        except Exception as e:  # noqa: BLE001 (a torn or foreign file: start cold, say so)
            log.warning("%s: not resumed (%s: %s); the curves start cold", self.path, type(e).__name__, e)
            return None
        if not isinstance(data, dict) or data.get("version") != VERSION or data.get("key") != self.key:
            log.warning("%s: written for another policy, rule, curves or bounds; the curves start cold", self.path)
            return None
        state = data.get("state")
        return state if isinstance(state, dict) else None

    def save(self, state: dict[str, Any]) -> None:
        """Write atomically (a temporary file renamed over the old one): a crash mid-write leaves the last one."""
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            pickle.dump({"version": VERSION, "key": self.key, "state": state}, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def code_fingerprint() -> str:
    """A hash of the source of every module whose objects the checkpoint pickles: a deploy that changes any of them
    starts cold instead of resuming objects of another shape (an old pickle can load and then fail at its first
    decision)."""
    import cachetuner.control.mrc
    import cachetuner.mrc.cost
    import cachetuner.mrc.curves
    import cachetuner.mrc.decide
    import cachetuner.mrc.estimator
    import cachetuner.mrc.fill
    import cachetuner.mrc.knobs
    import cachetuner.mrc.rule_settings
    import cachetuner.mrc.window
    import cachetuner.sim.params

    h = hashlib.sha256()
    for mod in (cachetuner.control.mrc, cachetuner.mrc.cost, cachetuner.mrc.curves, cachetuner.mrc.decide, cachetuner.mrc.estimator,
                cachetuner.mrc.fill, cachetuner.mrc.knobs, cachetuner.mrc.rule_settings, cachetuner.mrc.window,
                cachetuner.sim.params):
        h.update(Path(mod.__file__ or "").read_bytes())
    return h.hexdigest()[:16]


def checkpoint_for(controller: Any, target: str, state_dir: str | Path, every: int | None,
                   context: dict[str, Any]) -> Checkpoint | None:
    """The checkpoint of ``target``'s policy when ``every`` is set: for the ``mrc`` family (``mrc``, ``mrc-history``),
    and for ``ppo`` (its anchor; the anchor's rule is part of the curves' settings in ``context``). None otherwise
    (other controllers start as they always did). ``context``: what the saved state depends on besides the rule's
    settings and the code (the policy name, the curves' and simulator's settings, the bounds, the interval, the
    history); any change starts cold."""
    if every is None or not isinstance(controller, MRCController | LearnedPolicy):
        return None
    rule = controller.decider.settings.model_dump(mode="json") if isinstance(controller, MRCController) else None
    key = json.dumps({**context, "rule": rule, "code": code_fingerprint(), "version": VERSION}, sort_keys=True,
                     default=str)
    return Checkpoint(Path(state_dir) / f"policy-{target}.pkl", every, key)


__all__ = ["Checkpoint", "checkpoint_for"]
