"""One error root, specific subclasses.

The CLI catches :class:`CacheTunerError` and prints ``str(err)`` as a single line (no traceback):
every message must therefore name the file, line, byte offset or config field at fault and,
where it helps, what to do next.
"""

from __future__ import annotations


class CacheTunerError(Exception):
    """Root of every error CacheTuner raises on purpose (user mistakes, unreachable services)."""


class TraceError(CacheTunerError):
    """A trace file cannot be read: unknown format, malformed line, truncated record."""


class ConfigError(CacheTunerError):
    """A config file or option is invalid; the message names the file and the field."""


class BackendError(CacheTunerError):
    """A cache backend (simulator or live Redis) failed an operation."""


class ConfigRefusedError(BackendError):
    """A backend refused a configuration change (e.g. ACL denies CONFIG SET)."""


class ServiceError(CacheTunerError):
    """An external process (redis-server, prometheus, exporter, tritonserver) failed to start or answer."""


class MetricsUnavailableError(BackendError):
    """Metrics could not be read (Prometheus down, no samples yet, NaN)."""


class UnknownNameError(ConfigError):
    """A name (controller, trace format, eviction policy, reward, ...) is not registered; the message
    lists the valid names."""


class UnknownTraceNameError(UnknownNameError, TraceError):
    """An unknown trace-side name (trace format, synthetic workload, size model, bundled trace): an
    :class:`UnknownNameError` that ``except TraceError`` callers still catch."""
