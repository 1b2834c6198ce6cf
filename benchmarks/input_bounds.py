"""Linearity of what a client may send: each check timed at n and 2n, reported as the ratio.

A linear check doubles (ratio about 2); a quadratic one quadruples. Inputs
are built here in memory (no git, no daemon): the inventory checks at and
past its documented 100,000 entries (literal files and a glob), the JSON
depth count and path-map usage. (The brute-force import race is
benchmarks/import_races.py.)

    python benchmarks/input_bounds.py [--n 50000]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from coverage_core import nesting
from coverage_core.composite import inventory
from coverage_core.composite.inventory import load
from coverage_core.project import unused_path_maps


def _inventory(variants: int, files: int) -> tuple[bytes, list[str]]:
    tracked = [f"src/f{i}.c" for i in range(files)]
    doc = {
        "inventory_version": 1,
        "components": [
            {
                "id": "c",
                "language": "native",
                "format": "llvm",
                "sources": tracked if files > 1 else ["src/f0.c"],
                "variants": [f"v{i}" for i in range(variants)],
            }
        ],
        "aliases": [
            {"logical_source_id": f"lib{i}", "paths": [tracked[2 * i], tracked[2 * i + 1]]}
            for i in range(files // 2)
        ],
    }
    return json.dumps(doc, separators=(",", ":")).encode(), tracked


def _loader(variants: int, files: int) -> Callable[[], object]:
    data, tracked = _inventory(variants, files)
    return lambda: load(data, "inv.json", tracked)


def _globbed(files: int) -> Callable[[], object]:
    """One component whose source is a ``**`` glob, matched against ``files`` tracked files."""
    tracked = [f"src/d{i % 100}/f{i}.c" for i in range(files)]
    component = {
        "id": "c",
        "language": "native",
        "format": "llvm",
        "sources": ["src/**/f*.c"],
        "variants": ["v"],
    }
    data = json.dumps({"inventory_version": 1, "components": [component]}).encode()
    return lambda: load(data, "inv.json", tracked)


CASES: dict[str, Callable[[int], Callable[[], object]]] = {
    "inventory: n variants of one file": lambda n: _loader(n, 1),
    "inventory: n duplicate variants": lambda n: (
        lambda: _refused(
            json.dumps(
                {
                    "inventory_version": 1,
                    "components": [
                        {
                            "id": "c",
                            "language": "other",
                            "format": "regions-v1",
                            "sources": ["a"],
                            "variants": ["v"] * n,
                        }
                    ],
                }
            ).encode()
        )
    ),
    "inventory: n literal files, n/2 aliases": lambda n: _loader(1, n),
    "inventory: a ** glob over n tracked files": _globbed,
    "json depth: n nested lists": lambda n: lambda text=b"[" * n + b"]" * n: nesting.depth(text),
    "path maps: 100 maps over n report paths": lambda n: (
        lambda paths=[f"/build/src/f{i}.c" for i in range(n)]: unused_path_maps(
            paths, [(f"/other{i}", "") for i in range(100)]
        )
    ),
}


def _refused(data: bytes) -> None:
    from coverage_core.errors import CoverageError

    try:
        load(data, "inv.json", ["a"])
    except CoverageError:
        return
    raise AssertionError("duplicate variants were accepted")


def _time(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    args = parser.parse_args()
    n = args.n
    # Past the documented bounds on purpose: the shape of the cost, not the refusal, is measured.
    inventory.MAX_INVENTORY_BYTES = inventory.MAX_INVENTORY_FILES = 1 << 40
    print(f"{'check':45} {'n':>8} {'t(n) s':>9} {'t(2n) s':>9} {'ratio':>6}")
    for name, make in CASES.items():
        one, two = _time(make(n)), _time(make(2 * n))
        print(f"{name:45} {n:>8} {one:>9.3f} {two:>9.3f} {two / one:>6.2f}")


if __name__ == "__main__":
    main()
