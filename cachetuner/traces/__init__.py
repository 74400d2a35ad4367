"""Trace library: readers for public cache traces, seeded synthetic workloads, one :class:`Trace` type.

Use :func:`read_trace` for everything (files, ``synthetic:NAME``, workload YAML); extend with
:func:`register_format` (a :class:`TraceReader`) or :func:`register_workload`.
"""

from cachetuner.traces import readers as _readers  # noqa: F401  (registers the built-in formats)
from cachetuner.traces.api import detect_format, read_trace
from cachetuner.traces.assemble import DEFAULT_RATE, KEY_PREFIX, key_name, numeric_key_bytes
from cachetuner.traces.base import FORMATS, TraceReader, get_reader, list_formats, register_format
from cachetuner.traces.bundled import BUNDLED_TRACES, bundled_trace_format, bundled_trace_path
from cachetuner.traces.sizes import DEFAULT_SIZE_MODEL, SIZE_MODELS, SizeModel, parse_size_model
from cachetuner.traces.stats import summarize, top_share
from cachetuner.traces.synthetic import SYNTHETIC_WORKLOADS, register_workload
from cachetuner.traces.trace import Op, Trace

__all__ = [
    "BUNDLED_TRACES",
    "DEFAULT_RATE",
    "DEFAULT_SIZE_MODEL",
    "FORMATS",
    "KEY_PREFIX",
    "SIZE_MODELS",
    "SYNTHETIC_WORKLOADS",
    "Op",
    "SizeModel",
    "Trace",
    "TraceReader",
    "bundled_trace_format",
    "bundled_trace_path",
    "detect_format",
    "get_reader",
    "key_name",
    "list_formats",
    "numeric_key_bytes",
    "parse_size_model",
    "read_trace",
    "register_format",
    "register_workload",
    "summarize",
    "top_share",
]
