"""One small name registry for every extension axis (controllers, trace formats, policies, ...).

Why one: each axis used to hand-roll the same register/lookup/"unknown name" code with its own error
type. Here a registry maps names to factories, refuses a name registered twice (a programming error)
and answers an unknown name with one :class:`~cachetuner.errors.UnknownNameError` line that lists the
valid names, so every axis fails the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from cachetuner.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """``name -> T`` (usually a class or factory), in registration order.

    Args:
        kind: what the names are ("controller", "trace format", ...), used in error messages.
        field: the config field or option the name came from, named first in errors (optional).
        error: the exception raised for an unknown name: :class:`UnknownNameError` or a subclass
            (trace-side registries use one that is also a ``TraceError``, as their callers expect).
    """

    def __init__(self, kind: str, field: str | None = None, *, error: type[UnknownNameError] = UnknownNameError) -> None:
        self.kind = kind
        self.field = field
        self.error = error
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@REGISTRY.register("name")`` on a class or function."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = obj

    def get(self, name: str, *, field: str | None = None) -> T:
        """The entry for ``name``; an unknown name raises one line listing the valid ones.

        ``field`` overrides the registry's field in that message, for a call site that knows better
        where the name came from (``phases[2].workload``, ``FILE: field 'synthetic'``).
        """
        try:
            return self._items[name]
        except KeyError:
            where = field if field is not None else self.field
            prefix = f"{where}: " if where else ""
            raise self.error(
                f"{prefix}unknown {self.kind} {name!r}; valid: {', '.join(self._items) or '(none registered)'}"
            ) from None

    def __getitem__(self, name: str) -> T:
        """``REGISTRY[name]`` is :meth:`get` (an unknown name raises the one-line error, not KeyError)."""
        return self.get(name)

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        return list(self._items.items())

    def values(self) -> list[T]:
        return list(self._items.values())


__all__ = ["Registry"]
