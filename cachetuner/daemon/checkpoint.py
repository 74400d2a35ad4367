"""The ``mrc`` rule's state across daemon restarts: its miss-ratio curves and the decider, saved to ``state_dir``.

Why: the curves take hundreds of sampled GETs to be ready, and until then ``mrc`` runs its cold phase, whose rules
are bets made without evidence (cold growth, cold free growth, the cold memory bound). A daemon restarted after a
deploy, a crash or ``kill -9`` would otherwise place those bets again on a cache that has been tuned for weeks. The
evaluation measures what warm curves are worth (README "Against an operator with history": ``mrc`` that watched
the past against ``mrc`` cold). So every ``policy.checkpoint_intervals`` decisions, and at shutdown, the daemon
pickles the mirror env's estimator and the controller; a daemon started with the same policy, rule settings, curve
settings and bounds resumes from them instead of starting cold. Anything else (another policy, new bounds, an
unreadable file) starts cold and says why in the log.

The file is a pickle the daemon wrote into its own ``state_dir``; like ``state.json`` it must not be writable by
anyone the daemon does not trust.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachetuner.control.mrc import MRCController
from cachetuner.mrc.estimator import MRCEstimator

log = logging.getLogger("cachetuner.daemon")

#: bump when what is pickled changes shape
VERSION = 1


@dataclass
class Checkpoint:
    """Where one target's policy state goes, how often, and what it must match to be resumed."""

    path: Path
    every: int
    key: str  # JSON of the policy name, the rule's settings, the curves' settings and the bounds

    def load(self) -> tuple[MRCEstimator, MRCController] | None:
        """The saved (estimator, controller) if the file exists and was written for the same key; else None."""
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
        return data["estimator"], data["controller"]

    def save(self, estimator: MRCEstimator, controller: MRCController) -> None:
        """Write atomically (a temporary file renamed over the old one): a crash mid-write leaves the last one."""
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            pickle.dump({"version": VERSION, "key": self.key, "estimator": estimator, "controller": controller}, f,
                        protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def checkpoint_for(controller: Any, name: str, target: str, state_dir: str | Path, every: int | None,
                   mrc_settings: dict[str, Any], bounds: tuple[int, int]) -> Checkpoint | None:
    """The checkpoint of ``target``'s policy, for the ``mrc`` family (``mrc``, ``mrc-history``) when ``every`` is set;
    None otherwise (other controllers start as they always did)."""
    if every is None or not isinstance(controller, MRCController):
        return None
    key = json.dumps({"name": name, "rule": controller.decider.settings.model_dump(mode="json"), "curves": mrc_settings,
                      "bounds": list(bounds)}, sort_keys=True)
    return Checkpoint(Path(state_dir) / f"policy-{target}.pkl", every, key)


__all__ = ["Checkpoint", "checkpoint_for"]
