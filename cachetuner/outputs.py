"""Files a command writes where the user said: checked before any work, in one line naming the option.

Why before: a long command (a suite, a recommendation over a large trace) that finds at its end that ``--plot``
names a folder, a missing folder or a format matplotlib cannot write would throw the work away with a traceback.
A missing parent folder is refused rather than created: a mistyped path should not leave new folders behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from cachetuner.errors import ConfigError

#: what ``matplotlib.figure.Figure.savefig`` writes with the Agg backend (by the file's suffix)
IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_output_file(
    path: str | os.PathLike[str], option: str, *, suffixes: tuple[str, ...] | None = None, force: bool = True
) -> Path:
    """``path`` if a file can be written there; else :class:`ConfigError` (``--plot x.txt: ...``). ``force=False``
    refuses an existing file; ``suffixes`` are the allowed endings (lower case, with the dot)."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{option} {p}: a directory; give a file name")
    if p.exists() and not force:
        raise ConfigError(f"{option} {p}: exists; pass --force to overwrite it")
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} {p}: expected a file ending in {', '.join(suffixes)}")
    parent = p.parent
    if not parent.is_dir():
        up = next((a for a in [parent, *parent.parents] if a.exists()), None)
        if up is not None and not up.is_dir():
            raise ConfigError(f"{option} {p}: {up} is a file, not a folder")
        raise ConfigError(f"{option} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{option} {p}: folder {parent} is not writable")
    return p


__all__ = ["IMAGE_SUFFIXES", "check_output_file"]
