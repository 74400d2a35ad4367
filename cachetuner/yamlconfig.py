"""Load YAML into typed pydantic models with one-line errors naming the file and the field.

Every YAML config of CacheTuner (env, train, daemon, A/B, hotness, suites, workload and params
files) is read with :func:`load_yaml` and validated with :func:`validate` / :func:`load_model`, so
every error has one form::

    FILE: field 'a.b': message

(:func:`field_error` for checks made outside the model; :func:`section` for a config that is one
section of a larger file, whose fields are then reported as ``section.field``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from cachetuner.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def field_error(source: object, loc: str, msg: str) -> str:
    """The one-line form ``source: field 'loc': msg``."""
    return f"{source}: field '{loc}': {msg}"


def format_validation_error(err: ValidationError, source: str, prefix: str = "") -> str:
    """``source: field 'prefix.field.path': message`` for the first error (and a count of the others)."""
    first = err.errors()[0]
    loc = prefix + ".".join(str(p) for p in first["loc"]) if first["loc"] else prefix.rstrip(".") or "<root>"
    more = len(err.errors()) - 1
    tail = f" (and {more} more error{'s' if more > 1 else ''})" if more > 0 else ""
    return field_error(source, loc, _message(first) + tail)


def _message(error: Any) -> str:
    """One pydantic error's message as a user reads it (no "Value error, " prefix; "unknown field" for extras)."""
    return "unknown field" if error.get("type") == "extra_forbidden" else str(error["msg"]).removeprefix("Value error, ")


def validate(model: type[M], data: object, source: str, *, prefix: str = "") -> M:
    """Validate ``data`` into ``model``; raise :class:`ConfigError` naming ``source`` and the field
    (``prefix`` is put before the field path, e.g. ``"env."`` for a section)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, source, prefix)) from None


def validate_options(model: type[M], data: object) -> M:
    """Validate command-line options into ``model``; a :class:`ConfigError` names the option (``--rate: Input
    should be greater than 0, got -5.0``), for models whose fields are named after the options (``size_model`` is
    ``--size-model``)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        option = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else model.__name__
        got = f", got {first['input']!r}" if "input" in first and not isinstance(first["input"], dict) else ""
        raise ConfigError(f"{option}: {_message(first)}{got}") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with the same key twice: YAML itself lets the last one win, which
    silently drops the first value a user wrote (``alpha: 0.8`` ... ``alpha: 1.2`` three screens below)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: its keys may be overridden here, by design
                continue
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            try:
                dup = key in seen
            except TypeError:  # an unhashable key: let the constructor report it
                break
            if dup:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (the first value would be lost)", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> dict:
    """A YAML file whose top level is a mapping (empty file = ``{}``); one-line :class:`ConfigError` otherwise
    (a missing file, a directory or device, text that is not UTF-8, invalid YAML, a key given twice)."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: a directory, not a config file")
    if not p.exists():
        raise ConfigError(f"{p}: config file not found")
    if not p.is_file():
        raise ConfigError(f"{p}: not a regular file (a config file is YAML text)")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); a config file is YAML") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read ({e.strerror or e})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}{where}: invalid YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    return data


def with_overrides(obj: M, sets: list[str] | tuple[str, ...], source: str = "--set") -> M:
    """``obj`` with each ``PATH=VALUE`` of ``sets`` applied: ``PATH`` a dotted field path into the model
    (``controllers.mrc.confirm``), ``VALUE`` read as YAML (``true``, ``0.05``, ``null``, ``[0, 300]``), then the whole
    model validated again. Why: a setting tried on a suite is one field of a config of hundreds of lines (the shipped
    policy's ``train_config.yaml``), and a copy of the file per candidate hides which field differs; an override
    names it, in the command and in the result. A path that names no field, or walks into a field that is not a
    section, is a one-line :class:`ConfigError` naming it (a typo must not run the suite unchanged)."""
    data: Any = obj.model_dump()
    for text in sets:
        path, sep, raw = text.partition("=")
        parts = path.strip().split(".")
        if not sep or not all(p.strip() for p in parts):
            raise ConfigError(f"{source} {text!r}: expected PATH=VALUE with a dotted field path (controllers.mrc.confirm=4)")
        if not raw.strip():
            raise ConfigError(f"{source} {text!r}: no value after '=' (write null to unset a field)")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            raise ConfigError(f"{source} {text!r}: the value is not YAML ({getattr(e, 'problem', e)})") from None
        node = data
        for i, part in enumerate(parts):
            where = ".".join(parts[:i]) or "the config"
            if not isinstance(node, dict):
                raise ConfigError(f"{source} {text!r}: {where} is {'null' if node is None else 'a value'}, not a "
                                  "section with fields")
            if part not in node:
                near = difflib.get_close_matches(part, [str(k) for k in node], n=3)
                hint = f" (did you mean {', '.join(near)}?)" if near else ""
                raise ConfigError(f"{source} {text!r}: no field {part!r} in {where}{hint}")
            if i == len(parts) - 1:
                node[part] = value
            else:
                node = node[part]
    return validate(type(obj), data, source)


def section(data: dict, key: str, source: str) -> Any:
    """``data[key]``, where a dotted key names a nested section (``eval.env``); a missing section is a one-line
    :class:`ConfigError` naming the whole key."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(field_error(source, key, "missing section"))
        node = node[part]
    return node


def load_model(model: type[M], path: str | Path, *, key: str | None = None) -> M:
    """Read ``path`` (YAML) into ``model``; with ``key``, only that top-level section (errors then
    name ``key.field``)."""
    data: Any = load_yaml(path)
    if key is None:
        return validate(model, data, str(path))
    return validate(model, section(data, key, str(path)), str(path), prefix=f"{key}.")
