"""The sweep's plot for MLflow: validation score per trial, and each trial's learning curve."""

from __future__ import annotations

from typing import Any

_COLOURS = {"finished": "tab:green", "stopped": "tab:orange", "crashed": "tab:red", "interrupted": "tab:grey"}


def sweep_figure(trials: list[Any]) -> Any:
    """Left: best validation score of every trial (bar colour = how it ended; crashed trials at 0 with
    an x). Right: validation score against training steps, one line per trial (where ASHA cut)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    labels = [t.trial_id[-5:] for t in trials]
    for i, t in enumerate(trials):
        if t.best_score is None:
            ax1.plot(i, 0, "x", color=_COLOURS.get(t.status, "k"))
        else:
            ax1.bar(i, t.best_score, color=_COLOURS.get(t.status, "k"))
        if t.history:
            xs, ys = zip(*t.history, strict=True)
            ax2.plot(xs, ys, marker="o", ms=3, label=labels[i], color=_COLOURS.get(t.status, "k"), alpha=0.8)
    ax1.set_xticks(range(len(trials)))
    ax1.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax1.set_ylabel("best validation score (mean episode reward)")
    ax1.set_title("score per trial (green finished, orange ASHA-stopped, red crashed)", fontsize=9)
    ax2.set_xlabel("training steps")
    ax2.set_ylabel("validation score")
    ax2.set_title("validation score at each evaluation", fontsize=9)
    if any(t.history for t in trials):
        ax2.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig
