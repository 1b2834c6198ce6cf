"""The suite's check that every query through ``Call`` names the detail tables it reads.

The product never looks at SQL text: a read declares its detail tables (``Call.rows(..., detail=)``) and the
store restores them for compacted snapshots. A read that forgets would answer a compacted snapshot's detail
as empty, silently, and only on a store that compacted; here DuckDB's own parser names the tables each query
reads, so the forgotten declaration fails whichever store the test uses.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import duckdb

from coverage_core.review.call import Call
from coverage_core.storage.payload import DETAIL

# What a test's queries read without declaring it: (table names, the query); emptied by each test's check.
UNDECLARED: list[tuple[frozenset[str], str]] = []


_PARSER = duckdb.connect()  # parses only: json_serialize_sql reads no table
_PARSER_LOCK = threading.Lock()


def _base_tables(tree: Any) -> Iterator[str]:
    if isinstance(tree, dict):
        if tree.get("type") == "BASE_TABLE":
            yield str(tree["table_name"])
        for value in tree.values():
            yield from _base_tables(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _base_tables(value)


@functools.lru_cache(maxsize=4096)
def _read_tables(sql: str) -> frozenset[str]:
    """The tables ``sql`` reads, as DuckDB's parser names them (a handler's queries repeat: parsed once)."""
    with _PARSER_LOCK:
        tree = json.loads(_PARSER.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])  # type: ignore[index]
    assert not tree.get("error"), f"the detail check cannot parse {sql!r}: {tree.get('error_message')}"
    return frozenset(_base_tables(tree))


def undeclared(sql: str, detail: Sequence[str]) -> frozenset[str]:
    """The detail tables ``sql`` reads that ``detail`` leaves out."""
    return _read_tables(sql) & DETAIL.keys() - set(detail)


def _checked(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Call, sql: str, params: Any = (), *, detail: Sequence[str] = ()) -> Any:
        missing = undeclared(sql, detail)
        if missing:
            UNDECLARED.append((missing, sql))
            raise AssertionError(
                f"a query reads detail {sorted(missing)} without declaring it (detail=): {sql}"
            )
        return method(self, sql, params, detail=detail)

    return run


def install() -> None:
    """Check every ``Call.rows``, ``one`` (and so ``value``) and ``numpy`` of this process."""
    for name in ("rows", "one", "numpy"):
        setattr(Call, name, _checked(getattr(Call, name)))
