"""``read_trace``: one entry point for trace files, ``synthetic:NAME`` specs and workload YAML files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cachetuner.errors import TraceError
from cachetuner.traces import synthetic
from cachetuner.traces.assemble import ReadOptions, check_rate
from cachetuner.traces.base import FORMATS, TraceReader, get_reader, list_formats
from cachetuner.traces.bundled import bundled_trace_format, bundled_trace_path
from cachetuner.traces.rate_profile import parse_rate_profile
from cachetuner.traces.sizes import parse_size_model
from cachetuner.traces.streams import (
    ProgressFn,
    Source,
    not_a_file,
    read_head,
    source_of,
    strip_compression_suffix,
)
from cachetuner.traces.trace import Trace

WORKLOAD_FILE_SUFFIXES = (".yaml", ".yml")
#: ``bundled:NAME`` names a trace shipped in ``cachetuner/data``.
BUNDLED_PREFIX = "bundled:"


def _names_format(name: str, ext: str) -> bool:
    """Whether a (lower-case, compression-suffix-stripped) file name carries the format's extension: at its end, or as whole
    dotted parts inside it, as in the public libCacheSim collections' ``cluster52.oracleGeneral.sample10.zst``
    (a sampled copy) and ``w01.oracleGeneral.bin.zst``."""
    return name.endswith(ext) or f"{ext}." in name


def detect_format(path: Path, source: Source | None = None) -> TraceReader:
    """Pick the reader by extension, else by content; refuse to guess when more than one fits. ``source``: how the
    file is stored, when the caller has it already (an archive is judged by the name of the file in it)."""
    if source is None and path.is_file():
        source = source_of(path)
    member = source.member if source is not None else None
    name = strip_compression_suffix(member.name if member else path.name)  # an archive: the name of the file in it
    by_ext = [r for r in FORMATS.values() if any(_names_format(name, ext) for ext in r.extensions)]
    if len(by_ext) == 1:
        return by_ext[0]
    if not path.is_file():
        raise not_a_file(path)
    head = read_head(path)
    if not head:
        raise TraceError(f"{path}: empty file")
    candidates = [r for r in (by_ext or FORMATS.values()) if r.sniff(head)]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        what = f"could be {', '.join(r.name for r in candidates)}"
    elif b"\x00" in head[:4096]:
        binary = [r.name for r in FORMATS.values() if getattr(r, "binary", False)]
        what = f"binary without a magic number: {', '.join(binary)}"
    else:
        what = "not recognised"
    raise TraceError(
        f"{path}: cannot tell the trace format ({what}); pass --format NAME (valid: {', '.join(list_formats())})"
    )


def read_trace(
    path_or_spec: str | Path,
    format: str = "auto",
    *,
    size_model: str | None = None,
    rate: float | None = None,
    seed: int = 0,
    limit: int | None = None,
    params: dict | None = None,
    progress: ProgressFn | None = None,
    rate_profile: str | None = None,
    start: int = 0,
) -> Trace:
    """Read a trace file or generate a synthetic workload.

    Args:
        path_or_spec: a trace file (zstd, gzip, xz and bzip2 are decompressed on the fly; a tar or zip archive of one
            file is read as that file), ``synthetic:NAME``,
            ``bundled:NAME`` (a trace shipped with the package), or a workload YAML file
            ``{synthetic: NAME, params: {...}}``.
        format: a name from :data:`FORMATS`, or ``auto`` (extension, then content sniffing; an
            ambiguous file is refused with a request for ``--format``).
        size_model: ``fixed:BYTES`` / ``lognormal:MEDIAN,SIGMA`` / ``llm[...]``, drawn once per key.
            Required for nothing: size-less traces default to ``fixed:4096``. When given for a trace
            that has sizes, it replaces them (what-if experiments).
        rate: requests/s. Size-less-timing traces default to 1000/s; given for a timed trace it
            re-times requests uniformly; for a synthetic workload it sets the ``rate`` param.
        seed: seeds size draws and synthetic generators (same seed, same trace).
        limit: keep only the first ``limit`` requests (after ARC block / Meta op_count expansion).
        start: first drop this many requests (counted the same way): ``start=2_000_000, limit=1_000_000`` reads
            requests 2,000,000 to 2,999,999 as a trace of their own (keys renumbered, sizes drawn and the working
            set counted over the window; a trace's own timestamps kept, so the window starts when it started).
        params: reader options (e.g. ``{"expand": False}`` for arc) or workload parameters
            (merged over the YAML file's ``params``).
        progress: called with (bytes read, file bytes) while reading a file.
        rate_profile: ``diurnal:PERIOD_S,AMPLITUDE`` or ``bursts:PERIOD_S,DUTY[,LOW]``: the re-timing's load
            swings around ``rate`` or comes in bursts instead of staying at it (:mod:`cachetuner.traces.rate_profile`);
            for traces without timestamps, or timed ones re-timed with ``rate``. Not for synthetic workloads, which
            generate their own arrivals.
    """
    if limit is not None and limit < 1:
        raise TraceError(f"{path_or_spec}: limit must be >= 1, got {limit}")
    if start < 0:
        raise TraceError(f"{path_or_spec}: start must be >= 0, got {start}")
    if rate is not None:
        check_rate(f"{path_or_spec}: rate", rate)
    opts = ReadOptions(
        size_model=parse_size_model(size_model) if size_model is not None else None,  # "" is an error, not the default
        rate=rate,
        rate_profile=parse_rate_profile(rate_profile) if rate_profile is not None else None,
        seed=seed,
        limit=limit,
        start=start,
        params=dict(params or {}),
        progress=progress,
    )
    spec = str(path_or_spec)
    synthetic_file = format in ("auto", "synthetic") and Path(spec).suffix.lower() in WORKLOAD_FILE_SUFFIXES
    if opts.rate_profile is not None and (spec.startswith(synthetic.PREFIX) or synthetic_file):
        raise TraceError(f"{spec}: rate profile {opts.rate_profile.spec} re-times a trace; a generated workload has its "
                         "own arrivals (synthetic:diurnal swings)")
    if isinstance(path_or_spec, str) and spec.startswith(synthetic.PREFIX):
        if format not in ("auto", "synthetic"):  # said, not ignored: the user may think the workload was read as such
            raise TraceError(f"{spec}: --format {format} does not apply to a generated workload (leave it at auto)")
        return synthetic.generate(spec[len(synthetic.PREFIX) :], opts.params, opts)
    if isinstance(path_or_spec, str) and spec.startswith(BUNDLED_PREFIX):
        name = spec[len(BUNDLED_PREFIX) :]
        path = bundled_trace_path(name)
        fmt = bundled_trace_format(name) if format == "auto" else format
        trace = get_reader(fmt).read(path, opts)
        return replace(trace, name=spec)
    path = Path(path_or_spec)
    if format in ("auto", "synthetic") and path.suffix.lower() in WORKLOAD_FILE_SUFFIXES:
        name, file_params = synthetic.load_workload_file(path)
        merged = {**file_params, **opts.params}
        return synthetic.generate(name, merged, opts, source=f"{path} (synthetic:{name})")
    if format == "synthetic":
        raise TraceError(f"{path}: --format synthetic needs synthetic:NAME or a workload .yaml file")
    named = None if format == "auto" else get_reader(format)  # an unknown --format is said first, file or not
    if not path.is_file():
        raise not_a_file(path)
    if path.stat().st_size == 0:
        raise TraceError(f"{path}: empty file")
    source = source_of(path)  # once: it picks the format of an archive's file and goes into the trace's meta
    reader = named or detect_format(path, source)
    trace = reader.read(path, opts)
    if source.compression or source.member_compression:
        trace.meta["compression"] = source.compression or source.member_compression
    if source.member is not None:
        trace.meta["archive"], trace.meta["member"] = source.member.archive, source.member.name
    stored = source.describe()
    if stored:
        trace.meta["stored"] = stored  # `trace info` shows it: the user sees what was unpacked
    return trace
