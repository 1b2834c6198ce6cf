"""lcov's change category of every executable line, derived from coverage.py's own JSON of two runs.

An oracle independent of ``coverage_core.review.categories``: the categories' definitions applied to
coverage.py's executed and missing lines, for a history whose diff changed no line of the files both
runs measured and added the others (``conftest.shop_history``: c0, then c1 with ``shop/extra.py``).
"""

from __future__ import annotations

import json
from pathlib import Path


def oracle(reports: dict[str, tuple[Path, str]], path: str) -> tuple[dict[int, str], set[int]]:
    """From coverage.py's own JSON of both runs (the baseline c0, the current c1; git changed no line of
    the files both measured, and added shop/extra.py): each executable line's lcov category now, by the
    categories' definitions, and the partial lines (run, with a branch coverage.py lists as missing)."""
    now, then = (json.loads(reports[name][0].read_text())["files"] for name in ("c1", "c0"))
    f = now[path]
    ran = set(f["executed_lines"])
    code = ran | set(f["missing_lines"])
    partial = {a for a, _ in f["missing_branches"] if a in ran}
    if path not in then:  # a file the diff added: new code
        return {n: "GNC" if n in ran else "UNC" for n in code}, partial
    before = set(then[path]["executed_lines"])
    known = before | set(then[path]["missing_lines"])
    out = {}
    for n in code:
        if n not in known:
            out[n] = "GIC" if n in ran else "UIC"
        else:
            out[n] = {(True, True): "CBC", (False, True): "GBC", (True, False): "LBC", (False, False): "UBC"}[
                (n in before, n in ran)
            ]
    return out, partial
