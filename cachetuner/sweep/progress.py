"""Live sweep progress on stderr: one line per trial (rich), driven by Ray Tune's callback hooks.

Each line shows the trial's sampled settings, how many evaluations it has run, its last and best
validation score, and its end: finished, stopped by ASHA, or crashed (with the error's first line).
Ray's own reporter is silenced (``verbose=0``) so that stdout stays free for the result.
"""

from __future__ import annotations

import os
from typing import Any

from ray.tune import Callback
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cachetuner.sweep.trial import METRIC


def short_params(config: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    return " ".join(f"{k.rsplit('.', 1)[-1]}={fmt(v)}" for k, v in sorted(config.items()))


def first_line(err: Any) -> str:
    text = str(err).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Ray wraps the worker's exception: its last line is the original "Error: message".
    return (lines[-1] if lines else type(err).__name__)[:300]


class SweepProgress(Callback):
    """Ray Tune callback: per-trial progress lines, and the trials' last results for the driver."""

    def __init__(self, console: Console, evaluations: int, num_trials: int) -> None:
        self.console = console
        self.evaluations = evaluations
        self.num_trials = num_trials
        self.results: dict[str, dict[str, Any]] = {}  # last result per trial id
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.ended: dict[str, str] = {}  # finished | stopped | crashed
        self.errors: dict[str, str] = {}
        self.crashed: dict[str, Any] = {}  # trial id -> Trial, to read its error file at the end
        self.printed: dict[str, str] = {}  # last line printed per trial (log files: no repeats)
        self.progress: Progress | None = None
        self.tasks: dict[str, Any] = {}
        self.overall: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks with the experiment state; the live display stays on the driver.
        return {k: v for k, v in self.__dict__.items()
                if k not in ("progress", "tasks", "overall", "console", "crashed")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, progress=None, tasks={}, overall=None, console=Console(stderr=True), crashed={})

    def setup(self, stop: Any = None, num_samples: int | None = None, total_num_samples: int | None = None,
              **info: Any) -> None:
        if not self.console.is_terminal:
            return  # a log file gets one line per event instead of a live display (see _line)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=False)
        self.progress.start()
        self.overall = self.progress.add_task("[bold]sweep: trials done", total=self.num_trials)

    def _line(self, trial: Any, state: str) -> None:
        self.configs[trial.trial_id] = dict(trial.config)
        r = self.results.get(trial.trial_id, {})
        score = f" score {r[METRIC]:.3f} best {r['best_score']:.3f}" if METRIC in r else ""
        evals = f" eval {min(int(r.get('training_iteration', 0)), self.evaluations)}/{self.evaluations}" if r else ""
        node = f" node {r['node_id'][:8]}" if r.get("node_id") else ""
        desc = f"{trial.trial_id} {short_params(trial.config)} [{state}]{evals}{score}{node}"
        if self.progress is None:
            if self.printed.get(trial.trial_id) != desc:
                self.console.print(f"sweep: {desc}", markup=False, highlight=False, soft_wrap=True)
                self.printed[trial.trial_id] = desc
            return
        desc = escape(desc)
        if trial.trial_id not in self.tasks:
            self.tasks[trial.trial_id] = self.progress.add_task(desc, total=self.evaluations)
        done = min(int(r.get("training_iteration", 0)), self.evaluations)
        self.progress.update(self.tasks[trial.trial_id], description=desc, completed=done)

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trial, "running")

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        self.results[trial.trial_id] = dict(result)
        self.history.setdefault(trial.trial_id, []).append(dict(result))
        self._line(trial, "finished" if result.get("final") else "running")

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        final = self.results.get(trial.trial_id, {}).get("final")
        self.ended[trial.trial_id] = "finished" if final else "stopped"
        self._line(trial, "finished" if final else "stopped by ASHA")
        if self.progress is not None:
            self.progress.advance(self.overall)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.crashed[trial.trial_id] = trial
        self.errors[trial.trial_id] = self.error_of(trial)
        self.ended[trial.trial_id] = "crashed"
        self._line(trial, f"crashed: {self.errors[trial.trial_id]}")
        if self.progress is not None:
            self.progress.advance(self.overall)

    @staticmethod
    def error_of(trial: Any) -> str:
        """The last line of the trial's traceback (``Error: message``), from Tune's error file."""
        path = trial.error_file
        text = None
        if path is not None and os.path.isfile(path):
            with open(path, errors="replace") as f:
                text = f.read()
        text = text or trial.get_error()
        return first_line(text) if text else "crashed (see Ray's logs)"

    def close(self) -> None:
        for tid, trial in self.crashed.items():  # Tune may write the error file after the callback
            if self.errors.get(tid, "").startswith("crashed (see"):
                self.errors[tid] = self.error_of(trial)
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
