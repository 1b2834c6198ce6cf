"""Hit counts that sum past 2^63-1 stay at that maximum and say ``saturated: true``; they never wrap.

A wrapped count reads as negative or as a small number: a covered region
"hit 0" and a composite "complete" on a wrong figure.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from pathlib import Path

import numpy as np

from coverage_core import counts, open_project
from coverage_core.composite import build
from coverage_core.parsers import parse_bytes
from coverage_core.parsers.reading import ReportBytes
from tests.gitrepo import make_repo

MAX = 2**63 - 1
BIG = 2**62 + 12345  # two of these pass MAX


def test_grouped_sums_are_exact_below_the_maximum_and_clamped_above_it() -> None:
    rng = random.Random(63)
    for _trial in range(200):
        n = rng.randrange(1, 40)
        values = [rng.choice([0, 1, rng.randrange(2**40), rng.randrange(2**62), MAX]) for _ in range(n)]
        starts = sorted({0, *rng.sample(range(n), rng.randrange(n))})
        sums, saturated = counts.reduceat(np.array(values, np.int64), np.array(starts, np.intp))
        bounds = [*starts, n]
        want = [sum(values[a:b]) for a, b in itertools.pairwise(bounds)]
        assert sums.tolist() == [min(w, MAX) for w in want]
        assert saturated == any(w > MAX for w in want)


def test_adding_at_repeated_positions_clamps_once_past_the_maximum() -> None:
    target = np.array([BIG, 5, 0], np.int64)
    assert counts.add_at(target, np.array([0, 0, 1, 2]), np.array([BIG, BIG, 7, MAX], np.int64))
    assert target.tolist() == [MAX, 12, MAX]
    assert not counts.add_at(target[1:2], np.array([0]), np.array([1], np.int64))


def _lcov(*records: str) -> bytes:
    return "".join(records).encode()


def _bytes(data: bytes, origin: str) -> ReportBytes:
    return ReportBytes(data, origin, None, len(data))


def _record(test: str, hits: int) -> str:
    return (
        f"TN:{test}\nSF:src/a.c\nFN:1,main\nFNDA:{hits},main\nDA:1,{hits}\nDA:2,0\n"
        f"BRDA:1,0,0,{hits}\nBRDA:1,0,1,-\nend_of_record\n"
    )


def test_lcov_records_whose_counts_sum_past_the_maximum_keep_the_maximum_and_say_saturated() -> None:
    report = parse_bytes(_bytes(_lcov(_record("one", BIG), _record("two", BIG)), "big.info"))
    assert report.lines["hits"].tolist() == [MAX, 0]
    assert report.branches["taken"].tolist() == [MAX, -1]
    assert report.functions["hits"].tolist() == [MAX]
    assert report.metadata["saturated"] is True
    assert [w.code for w in report.warnings].count("counts_saturated") == 1
    assert report.totals["lines"].hit == 1  # covered stays covered


def test_lcov_records_below_the_maximum_sum_exactly_and_are_not_flagged() -> None:
    report = parse_bytes(_bytes(_lcov(_record("one", 2**61), _record("two", 2**61)), "ok.info"))
    assert report.lines["hits"].tolist() == [2**62, 0]
    assert "saturated" not in report.metadata
    assert "counts_saturated" not in [w.code for w in report.warnings]


def test_go_blocks_whose_counts_sum_past_the_maximum_keep_the_maximum_and_say_saturated() -> None:
    text = f"mode: count\nm/a.go:1.1,2.9 1 {BIG}\nm/a.go:1.1,2.9 1 {BIG}\nm/a.go:3.1,4.2 1 0\n"
    report = parse_bytes(_bytes(text.encode(), "cover.out"))
    assert sorted(report.regions["hits"].tolist()) == [0, MAX]
    assert report.metadata["saturated"] is True


def _shard(text: bytes, hits: int) -> str:
    f = {
        "path": "shaders/a.wgsl",
        "source_sha256": hashlib.sha256(text).hexdigest(),
        "regions": [
            {"start_line": 1, "start_col": 1, "end_line": 1, "end_col": 5, "hits": hits},
            {"start_line": 2, "start_col": 1, "end_line": 2, "end_col": 5, "hits": 0},
        ],
    }
    return json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "files": [f]})


def test_composite_shards_whose_hits_sum_past_the_maximum_report_the_region_hit_and_saturated(
    tmp_path: Path,
) -> None:
    text = b"fn a() {}\nfn b() {}\n"
    inventory = {
        "inventory_version": 1,
        "components": [
            {
                "id": "gpu",
                "language": "other",
                "format": "regions-v1",
                "sources": ["shaders/a.wgsl"],
                "variants": ["vulkan"],
            }
        ],
    }
    root = make_repo(tmp_path / "r", {"shaders/a.wgsl": text.decode(), "inv.json": json.dumps(inventory)})
    (root / "one.json").write_text(_shard(text, BIG))
    (root / "two.json").write_text(_shard(text, BIG))
    with open_project(root) as project:
        comp = build(project, "inv.json", [f"gpu:vulkan={root}/one.json", f"gpu:vulkan={root}/two.json"])
        hits = project.store.con.execute("SELECT hits FROM composite_regions ORDER BY start_line").fetchall()
    assert [h for (h,) in hits] == [MAX, 0]
    assert comp.totals["code"] == {"found": 2, "hit": 1}
    assert comp.saturated is True and comp.to_dict()["saturated"] is True


def test_composite_shards_below_the_maximum_are_not_flagged(tmp_path: Path) -> None:
    text = b"fn a() {}\nfn b() {}\n"
    inventory = {
        "inventory_version": 1,
        "components": [
            {
                "id": "gpu",
                "language": "other",
                "format": "regions-v1",
                "sources": ["shaders/a.wgsl"],
                "variants": ["vulkan"],
            }
        ],
    }
    root = make_repo(tmp_path / "r", {"shaders/a.wgsl": text.decode(), "inv.json": json.dumps(inventory)})
    (root / "one.json").write_text(_shard(text, 3))
    with open_project(root) as project:
        comp = build(project, "inv.json", [f"gpu:vulkan={root}/one.json", f"gpu:vulkan={root}/one.json"])
    assert comp.saturated is False and comp.totals["code"] == {"found": 2, "hit": 1}


def test_llvm_instantiations_whose_counts_sum_past_the_maximum_keep_the_maximum_and_say_saturated() -> None:
    from .test_parse_llvm import export, parse_doc

    doc = export()
    # h.h's static inline helper, instantiated in two translation units: its one region and its one
    # function are each the sum of the two instantiations' counts.
    for function in doc["data"][0]["functions"][1:]:
        function["count"] = BIG
        function["regions"][0][4] = BIG
    report = parse_doc(doc)
    helper = next(i for i, f in enumerate(report.files) if f.path.endswith("h.h"))
    at = report.regions["file"] == helper
    assert report.regions["hits"][at].tolist() == [MAX]
    assert report.functions["hits"][report.functions["file"] == helper].tolist() == [MAX]
    assert report.metadata["saturated"] is True
    assert [w.code for w in report.warnings].count("counts_saturated") == 1


def test_cobertura_classes_of_one_file_whose_line_hits_sum_past_the_maximum_say_saturated() -> None:
    # Two <class> elements naming one file (a file compiled into two targets): its lines' hits add up.
    classes = "".join(
        f'<class name="a{i}" filename="src/a.c"><methods/><lines>'
        f'<line number="3" hits="{BIG}" branch="false"/><line number="9" hits="0" branch="false"/>'
        "</lines></class>"
        for i in range(2)
    )
    text = (
        '<?xml version="1.0" ?>\n<coverage version="gcovr 8.8" line-rate="0.5" lines-valid="2" '
        'lines-covered="1" branches-valid="0" branches-covered="0"><sources><source>/build</source></sources>'
        f'<packages><package name="src"><classes>{classes}</classes></package></packages></coverage>\n'
    )
    report = parse_bytes(_bytes(text.encode(), "coverage.xml"))
    assert report.lines["hits"].tolist() == [MAX, 0]
    assert report.metadata["saturated"] is True
    assert report.totals["lines"].hit == 1
