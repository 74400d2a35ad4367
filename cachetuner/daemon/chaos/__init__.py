"""Fault injection: the real daemon (a subprocess) against a local stack, one fault after another.

Setup: :class:`~cachetuner.live.stack.LocalStack` (redis-server + redis_exporter + Prometheus), a
least-privilege ACL user for the daemon (also written to the stack's ``redis.conf`` so it survives
a Redis restart, as an ``aclfile`` would in production), a supervised trace replayer in a thread
(restarted when Redis drops its connection) and a monitor thread that reads ``CONFIG GET`` ten times
a second with the admin user. The daemon runs the deliberately adversarial ``random`` policy, so
every fault happens while proposals far outside the bounds keep arriving.

Each fault gets a window ``[start, end)``: ``settle`` seconds of normal operation, the fault for
``duration_per_fault`` seconds, then ``settle`` seconds of recovery. Figures per fault, from the
audit log and the monitor's observations inside the window:

* ``out_of_bounds_applied``: distinct out-of-bounds configs the monitor saw on Redis plus audited
  applies of an out-of-bounds config (must be 0);
* ``decisions_lost``: intents without outcome or reconciliation, plus configs seen on Redis that no
  audited apply explains (must be 0);
* ``rollback_intervals``: intervals from the fault's start to the first rollback (0 when the fault
  caused none);
* ``survived``: the daemon process is alive (or exited 0 where that is the point), took a fresh
  decision after the fault, and the fault's own check passed (see ``notes``).

Modules: :mod:`.faults` (one class per fault, the :data:`~.faults.FAULTS` registry), :mod:`.harness`
(stack, daemon subprocess, replayer and monitor threads, one fault window), :mod:`.report` (per-window
figures and :func:`run_chaos`).
"""

from cachetuner.daemon.chaos.faults import (
    FAULT_NAMES,
    FAULTS,
    Fault,
    FaultContext,
    FaultWindow,
    WindowEvidence,
    get_fault,
    register,
    write_untrained_hotness_model,
)
from cachetuner.daemon.chaos.harness import (
    ACL_RULES,
    ACL_USER,
    CHAOS_BOUNDS,
    MIB,
    ChaosReplayer,
    ChaosRun,
    Monitor,
    Observation,
)
from cachetuner.daemon.chaos.report import evaluate_window, run_chaos

__all__ = [
    "ACL_RULES", "ACL_USER", "CHAOS_BOUNDS", "FAULTS", "FAULT_NAMES", "MIB", "ChaosReplayer", "ChaosRun", "Fault",
    "FaultContext", "FaultWindow", "Monitor", "Observation", "WindowEvidence", "evaluate_window", "get_fault", "register",
    "run_chaos", "write_untrained_hotness_model",
]  # fmt: skip
