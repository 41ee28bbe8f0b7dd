"""Functions registered by name (orderings, face orders, geometries).

A registry is a plain dict, so ``name in registry`` and ``sorted(registry)`` work
(the CLI takes its choices from it); lookups of unknown names list the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .errors import UnknownNameError

F = TypeVar("F", bound=Callable)


class Registry(dict[str, F]):
    """Name -> function, filled by the :meth:`register` decorator.

    Examples
    --------
    >>> shapes = Registry("shape")
    >>> @shapes.register("square")
    ... def square(x): return x * x
    >>> shapes.lookup("square")(3)
    9
    """

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator adding a function under ``name``."""

        def add(function: F) -> F:
            self[name] = function
            return function

        return add

    def lookup(self, name: str) -> F:
        """The function called ``name``; raises :class:`UnknownNameError` listing the names."""
        try:
            return self[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; choose from "
                                   f"{', '.join(sorted(self))}") from None
