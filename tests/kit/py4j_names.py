"""py4j's name lookups, each answered by the JVM once per view, package or class in the test
process.

pyspark resolves the JVM side of every column function again on each call: `F.col("x")` looks
up `functions` on the gateway's JVMView (the JVM tries Class.forName over each package pyspark
imported), then the static method `col` on that class, each a round trip to the JVM, before
the call itself. test_compaction_transforms made 3,366 view and package lookups (1,870 of them
for `functions`), 12.3 s of a 218 s run on a loaded machine (session 30). What a name resolves
to cannot change while the JVM runs: pyspark imports its packages once, when it launches the
gateway, and classes do not unload. Kept: classes, packages and static methods. Not kept: a
static field's value (it can change), and a name the JVM did not resolve (the error is raised
again each time).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView

_KEPT = (JavaClass, JavaPackage, JavaMember)


def _once(lookup: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    @functools.wraps(lookup)
    def resolved_once(self: Any, name: str) -> Any:
        # Through __dict__: an attribute missing on self would come back here.
        found = self.__dict__.setdefault("_kit_resolved", {})
        try:
            return found[name]
        except KeyError:
            pass
        value = lookup(self, name)
        if isinstance(value, _KEPT):
            found[name] = value
        return value
    return resolved_once


@contextmanager
def resolved_once() -> Iterator[None]:
    """Within: each JVMView, JavaPackage and JavaClass asks the JVM for a name once."""
    with pytest.MonkeyPatch.context() as patch:
        for cls in (JVMView, JavaPackage, JavaClass):
            patch.setattr(cls, "__getattr__", _once(cls.__getattr__))
        yield
