"""Structural fuzzing of JSON reports: every value replaced by every odd value."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

ODD_VALUES = [None, "x", "", [], {}, -1, 1.5, True, 2**70, [[1]], [None], float("nan"), 2**31]


def value_paths(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """Paths to every object member and to the first item of every list (the others look alike)."""
    yield path
    children = (
        node.items() if isinstance(node, dict) else enumerate(node[:1]) if isinstance(node, list) else ()
    )
    for key, child in children:
        yield from value_paths(child, (*path, key))


def odd_documents(doc: Any) -> Iterator[Any]:
    """Copies of ``doc``, each with one value replaced by one odd value."""
    for *parents, last in list(value_paths(doc))[1:]:
        for value in ODD_VALUES:
            mutated = copy.deepcopy(doc)
            target = mutated
            for key in parents:
                target = target[key]
            target[last] = value
            yield mutated
