"""Built-in trace readers; importing this package registers them in :data:`FORMATS`."""

from cachetuner.traces.readers import binary, blockcsv, kv, text

__all__ = ["binary", "blockcsv", "kv", "text"]
