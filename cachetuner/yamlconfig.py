"""Load YAML into typed pydantic models with one-line errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from cachetuner.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def format_validation_error(err: ValidationError, source: str) -> str:
    """``source: field.path: message`` for the first error (and a count of the others)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "<root>"
    msg = first["msg"]
    if first.get("type") == "extra_forbidden":
        msg = "unknown field"
    more = len(err.errors()) - 1
    tail = f" (and {more} more error{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{source}: field '{loc}': {msg}{tail}"


def validate(model: type[M], data: object, source: str) -> M:
    """Validate ``data`` into ``model``; raise :class:`ConfigError` naming ``source`` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, source)) from None


def load_yaml(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: config file not found")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}{where}: invalid YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    return data


def load_model(model: type[M], path: str | Path) -> M:
    """Read ``path`` (YAML) into ``model``."""
    return validate(model, load_yaml(path), str(path))
