"""Ray, started locally or joined as a cluster, for the jobs that scale out (sweeps, suite cells).

Ray is an optional dependency (``pip install 'cachetuner[ray]'``): nothing here imports it until a
function needs it, so ``import cachetuner`` never does, and a missing install is one line saying
what to install.

``--ray-address``: none = start Ray on this machine (stopped again afterwards); ``auto`` = the
cluster this machine belongs to (``ray start`` ran here); ``HOST:PORT`` = a cluster's GCS address
(``ray start --head --port PORT``); ``ray://HOST:PORT`` = Ray Client. Work sent to other nodes runs
in the driver's working directory when that path exists there (same checkout), so relative trace
paths and the default ``sqlite:///mlflow.db`` resolve as on the driver.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from cachetuner.errors import CacheTunerError, ConfigError, ServiceError

INSTALL_HINT = "pip install 'cachetuner[ray]' (or: make install)"
_ADDRESS = re.compile(r"^(auto|local|ray://[^\s:/]+:\d+|[^\s:/]+:\d+)$")


def require_ray() -> Any:
    """The ``ray`` module, or a one-line :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"Ray is not installed: {INSTALL_HINT}") from None
    return ray


def check_address(address: str | None) -> str | None:
    """``None`` (start locally) or a valid ``--ray-address``; anything else is a one-line error."""
    if address is None or address == "local":
        return None
    if not _ADDRESS.match(address):
        raise ConfigError(f"--ray-address {address!r}: expected auto, HOST:PORT or ray://HOST:PORT (or omit it to start Ray here)")
    if address != "auto":
        _probe(address)
    return address


def _probe(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not after Ray's minutes of retries, when nothing listens at HOST:PORT."""
    import socket

    host, port = address.removeprefix("ray://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ServiceError(
            f"--ray-address {address}: nothing answers there ({e.strerror or e}); start a head with "
            "`ray start --head --port PORT`, or omit --ray-address to run locally"
        ) from None


@contextlib.contextmanager
def connected(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray initialised for the duration of the block; yields the ``ray`` module.

    Without an address Ray starts on this machine with ``num_cpus`` (default: all) and no dashboard,
    and is shut down on exit; a cluster that was joined is only disconnected from. Worker output stays
    in Ray's logs (``log_to_driver=False``) so that stdout carries results only."""
    ray = require_ray()
    address = check_address(address)
    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": True, "logging_level": "ERROR"}
    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    if address is None:
        # "local": a new instance even where /tmp/ray/ray_current_cluster names a running (or stale) cluster.
        address = "local"
        kwargs.update(num_cpus=num_cpus, include_dashboard=False)
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ServiceError(
            f"cannot reach {where} ({first}); start one with `ray start --head --port PORT` "
            "and pass --ray-address HOST:PORT, or omit --ray-address to run locally"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def node_info() -> dict[str, str]:
    """Where the calling task or trial runs: Ray node id (unique per node, even on one host), host, IP."""
    import socket

    ray = require_ray()
    return {"node_id": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname(),
            "node_ip": ray.util.get_node_ip_address()}


def enter_workdir(path: str | None) -> None:
    """Run in the driver's working directory when this node has it (same checkout or shared disk).

    Why: Ray starts workers in its own directories (Tune: the trial directory), where relative trace
    paths and ``./mlflow.db`` would point nowhere."""
    if path and os.path.isdir(path):
        os.chdir(path)


def _call_in(workdir: str | None, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, dict[str, str]]:
    enter_workdir(workdir)
    from cachetuner.control.learned import one_thread

    one_thread()
    return fn(*args), node_info()


def _get(ray: Any, ref: Any) -> Any:
    """``ray.get(ref)``, but a user error raised in the task (a :class:`CacheTunerError`: a missing trace, a bad
    field) comes back as itself, one line, not wrapped in the worker's traceback."""
    from ray.exceptions import RayTaskError

    try:
        return ray.get(ref)
    except RayTaskError as e:
        if isinstance(e.cause, CacheTunerError):
            raise e.cause from None
        raise


def map_tasks(
    fn: Callable[..., Any],
    arg_tuples: Sequence[tuple[Any, ...]],
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    on_done: Callable[[int, Any], None] | None = None,
) -> tuple[list[Any], list[dict[str, str]]]:
    """``[fn(*a) for a in arg_tuples]`` as Ray tasks (one CPU each), results in input order.

    ``on_done(index, result)`` is called on the driver as each task finishes (progress). Returns the
    results and, per task, the node it ran on (:func:`node_info`). A task that raises re-raises here."""
    with connected(address, num_cpus=num_cpus) as ray:
        remote = ray.remote(num_cpus=1, max_retries=1)(_call_in)
        cwd = os.getcwd()
        refs = [remote.remote(cwd, fn, tuple(a)) for a in arg_tuples]
        index = {r.hex(): i for i, r in enumerate(refs)}
        results: list[Any] = [None] * len(refs)
        nodes: list[dict[str, str]] = [{}] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = index[ref.hex()]
                results[i], nodes[i] = _get(ray, ref)
                if on_done is not None:
                    on_done(i, results[i])
        return results, nodes
