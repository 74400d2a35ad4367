"""Built-in trace readers; importing this package registers them in :data:`FORMATS`."""

from cachetuner.traces.readers import binary, blockcsv, delimited, kv, lcsbin, text

__all__ = ["binary", "blockcsv", "delimited", "kv", "lcsbin", "text"]
