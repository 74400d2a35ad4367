"""The options several commands share (the trace options, ``--json``), as ``Annotated`` aliases,
plus one trace loader.

A command module takes a trace in three lines::

    from cachetuner.cli.trace_options import (FormatOpt, LimitOpt, ParamsOpt, RateOpt, SeedOpt,
                                              SizeModelOpt, TraceOpt, load_trace_from_options)

    @app.command()
    def simulate(trace: TraceOpt, format: FormatOpt = "auto", size_model: SizeModelOpt = None,
                 rate: RateOpt = None, seed: SeedOpt = 0, limit: LimitOpt = None,
                 params: ParamsOpt = None) -> None:
        tr = load_trace_from_options(trace, format, size_model, rate, seed, limit, params)

Give ``trace`` a default (e.g. ``= "bundled:web07"``) to make ``--trace`` optional.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from cachetuner.cli.app import console
from cachetuner.errors import ConfigError, TraceError
from cachetuner.traces import read_trace
from cachetuner.traces.assemble import check_rate
from cachetuner.traces.rate_profile import parse_rate_profile
from cachetuner.traces.sizes import parse_size_model
from cachetuner.traces.streams import ProgressFn
from cachetuner.traces.trace import Trace

#: Files at least this large get a progress bar on stderr.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024

TraceOpt = Annotated[
    str,
    typer.Option(
        "--trace",
        help="Trace file (.zst/.gz/.xz/.bz2 ok), synthetic:NAME, bundled:NAME, or a workload .yaml "
        "({synthetic: NAME, params: {...}}). See `cachetuner trace formats`.",
    ),
]
FormatOpt = Annotated[str, typer.Option("--format", help="Trace format name, or auto (extension / content).")]
SizeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--size-model",
        help="fixed:BYTES | lognormal:MEDIAN,SIGMA | llm[:P,EMBED,MEDIAN,SIGMA]; per key. "
        "Default for size-less traces: fixed:4096; replaces sizes when given.",
    ),  # fmt: skip
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate",
        help="Requests/s: timing for traces without timestamps (default 1000), "
        "re-timing for others, the rate param of synthetic workloads.",
    ),  # fmt: skip
]
RateProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--rate-profile",
        help="diurnal:PERIOD_S,AMPLITUDE (the load swings around --rate: a compressed day, e.g. diurnal:1800,0.8) or "
        "bursts:PERIOD_S,DUTY[,LOW] (a burst over that share of each period, then a lull at LOW x the mean, default "
        "0), instead of a steady --rate; needs a trace file, not a synthetic workload.",
    ),  # fmt: skip
]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed for size draws and synthetic workloads.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Keep only the first N requests.")]
StartOpt = Annotated[
    int,
    typer.Option(
        "--start",
        min=0,
        help="Read from request N on (--limit counts from there): a window of a long trace as a trace of its own.",
    ),
]
ParamsOpt = Annotated[
    Path | None,
    typer.Option(
        "--params",
        help="YAML mapping of workload params (synthetic) or reader params (e.g. expand: false for arc).",
    ),
]
#: ``--json``: the command prints exactly one JSON object on stdout (logs go to stderr).
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]


def load_params_file(path: Path | None) -> dict | None:
    """The ``--params`` YAML mapping (one-line ConfigError naming the file when invalid)."""
    if path is None:
        return None
    from cachetuner.yamlconfig import field_error, load_yaml

    data = load_yaml(path)
    if "synthetic" in data:
        raise ConfigError(
            field_error(path, "synthetic", "a --params file holds params only; pass a workload file as --trace")
        )
    return data


def check_trace_options(size_model: str | None, rate: float | None, rate_profile: str | None = None) -> None:
    """One line naming ``--size-model``, ``--rate`` or ``--rate-profile`` when one is invalid, before any trace is
    read (the trace reader's own message names the trace, not the option the user typed)."""
    if rate is not None:
        check_rate("--rate", rate)
    if rate_profile is not None:
        try:
            parse_rate_profile(rate_profile)
        except TraceError as e:
            raise type(e)(f"--rate-profile: {e}") from None
    if size_model is not None:
        try:
            parse_size_model(size_model)
        except TraceError as e:
            detail = str(e).removeprefix(f"size model {size_model!r}: ")
            raise type(e)(f"--size-model {size_model!r}: {detail}") from None


@contextmanager
def _progress_for(spec: str) -> Iterator[ProgressFn | None]:
    path = Path(spec)
    try:
        big = path.is_file() and path.stat().st_size >= PROGRESS_MIN_BYTES
    except OSError:
        big = False
    if not big:
        yield None
        return
    columns = (TextColumn("reading {task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(path.name, total=path.stat().st_size)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def load_trace_from_options(
    trace: str,
    format: str = "auto",
    size_model: str | None = None,
    rate: float | None = None,
    seed: int = 0,
    limit: int | None = None,
    params: Path | None = None,
    rate_profile: str | None = None,
    start: int = 0,
) -> Trace:
    """Resolve the shared trace options into a :class:`Trace` (progress bar on stderr for big files)."""
    check_trace_options(size_model, rate, rate_profile)
    with _progress_for(trace) as progress:
        return read_trace(
            trace,
            format,
            size_model=size_model,
            rate=rate,
            seed=seed,
            limit=limit,
            params=load_params_file(params),
            progress=progress,
            rate_profile=rate_profile,
            start=start,
        )
