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
        blocker = file_in_the_way(parent)
        why = f"{blocker} is a file, not a folder" if blocker is not None else f"folder {parent} does not exist"
        raise ConfigError(f"{option} {p}: {why}")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{option} {p}: folder {parent} is not writable")
    return p


def file_in_the_way(path: str | os.PathLike[str]) -> Path | None:
    """The file standing where ``path`` or the nearest of its existing parents should be a folder, else None (a
    folder, or one that does not exist yet and can be created)."""
    p = Path(path)
    blocker = p if p.exists() else next((a for a in p.resolve().parents if a.exists()), None)
    return blocker if blocker is not None and not blocker.is_dir() else None


def output_dir_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be (or become) a folder to write into, or None (a folder that does not exist yet is fine:
    the command creates it)."""
    blocker = file_in_the_way(path)
    if blocker is None:
        return None
    return "exists and is not a folder" if blocker == Path(path) else f"{blocker} is a file, not a folder"


def check_output_dir(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` if it is a folder or can be made one; else :class:`ConfigError` naming ``option``."""
    why = output_dir_problem(path)
    if why is not None:
        raise ConfigError(f"{option} {path}: {why}")
    return Path(path)


def claim_dir(parent: str | os.PathLike[str], name: str) -> Path:
    """A new, empty directory ``parent/name``, or ``name-2``, ``name-3``, ... when that one exists.

    Why: run directories are named ``{env}__{experiment}__{seed}__{unix time}``, so two trainings of one config
    started in the same second (a sweep's concurrent trials share a seed) would otherwise write one directory and
    corrupt each other's ``best_model.zip``. ``mkdir`` without ``exist_ok`` is atomic, so concurrent claims on one
    filesystem never get the same directory."""
    root = Path(parent)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        path = root / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{root}: 10,000 directories named {name}[-N] already")


__all__ = ["IMAGE_SUFFIXES", "check_output_dir", "check_output_file", "claim_dir", "file_in_the_way",
           "output_dir_problem"]
