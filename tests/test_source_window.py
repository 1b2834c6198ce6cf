"""A file's text, read in windows: lines broken where coverage tools break them, whole, decoded on demand.

``coverage_core.review.textlines.TextLines`` against a naive reader (split at
``\\n``, a ``\\r`` before it dropped), and the dashboard's source windows of a
real store of an LCOV report whose file has a form feed, a vertical tab, a
Unicode line separator, a CRLF line and a 400-character line: each annotation
lands on the line the report numbered, and each line's text is whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coverage_core.errors import CoverageError
from coverage_core.project import open_project
from coverage_core.review.textlines import TextLines
from coverage_core.service import Service

from .gitrepo import make_repo


def naive(data: bytes) -> list[str]:
    """The lines as gcov numbers them: split at every ``\\n``; a final ``\\n`` starts no line."""
    text = data.decode("utf-8", "replace")
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


@given(
    st.lists(
        st.sampled_from(
            [
                b"a",
                b"\xc3\xa9",
                b"\n",
                b"\r",
                b"\r\n",
                b"\x0c",
                b"\x0b",
                b"\x85",
                b"\xe2\x80\xa8",
                b"\xff",
                b" ",
            ]
        ),
        max_size=60,
    )
)
def test_text_lines_are_the_lines_gcov_numbers_whatever_the_text(parts: list[bytes]) -> None:
    data = b"".join(parts)
    lines = TextLines(data)
    want = naive(data)
    assert len(lines) == len(want)
    assert list(lines) == want
    assert lines[:] == want and lines[1:3] == want[1:3]
    if want:
        assert lines[-1] == want[-1] and lines[0] == want[0]
    with pytest.raises(IndexError):
        lines[len(want)]


def test_text_lines_of_an_empty_text_and_of_one_without_a_final_break() -> None:
    assert len(TextLines(b"")) == 0 and list(TextLines(b"\n")) == [""]
    assert list(TextLines(b"a\nb")) == ["a", "b"] and list(TextLines(b"a\r\nb\r\n")) == ["a", "b"]


LONG = "int wide = " + " + ".join(["1"] * 130) + ";"  # 400 characters: past any agent-facing cut
TEXT = (
    "\n".join(
        [
            "int a;",  # 1 covered
            "\f",  # 2 a form feed (a section break): not code
            "int b;",  # 3 uncovered
            "int c; \v int d;",  # 4 covered: a vertical tab inside the line
            "int e; /* \u2028 */",  # 5 uncovered: a Unicode line separator inside the line
            "int f;\r",  # 6 covered: a CRLF line
            LONG,  # 7 covered
            "int g;",  # 8 uncovered
        ]
    )
    + "\n"
)
HITS = {1: 3, 3: 0, 4: 1, 5: 0, 6: 2, 7: 1, 8: 0}


@pytest.fixture
def stored(tmp_path: Path, isolated_home: Path) -> tuple[Path, str]:
    repo = make_repo(tmp_path / "repo", {"f.c": TEXT})
    assert (repo / "f.c").read_bytes() == TEXT.encode()
    report = "TN:\nSF:f.c\n" + "".join(f"DA:{n},{h}\n" for n, h in HITS.items()) + "end_of_record\n"
    (tmp_path / "r.lcov").write_text(report)
    with open_project(repo) as project:
        return repo, project.ingest(tmp_path / "r.lcov").snapshot_id


def row(repo: Path, name: str, **args: Any) -> dict[str, Any]:
    with open_project(repo) as project:
        return Service(project).call(name, args)


def test_a_window_annotates_the_lines_the_report_numbered_and_shows_each_line_whole(
    stored: tuple[Path, str],
) -> None:
    repo, snap = stored
    window = row(repo, "dashboard_source", snapshot=snap, file="f.c", part="lines", start=1, count=100)[
        "data"
    ]
    want = naive(TEXT.encode())
    assert window["file_lines"] == len(want) == 8
    assert [line["text"] for line in window["lines"]] == want  # whole lines, none split, none cut
    statuses = {line["line"]: line["status"] for line in window["lines"]}
    assert statuses == {
        n: ("not code" if n not in HITS else "covered" if HITS[n] else "uncovered") for n in range(1, 9)
    }
    # a window further in starts where it is asked, on the same numbering
    later = row(repo, "dashboard_source", snapshot=snap, file="f.c", part="lines", start=7, count=2)["data"]
    assert [(line["line"], line["text"]) for line in later["lines"]] == [(7, LONG), (8, "int g;")]


def test_git_reads_a_blob_once_by_id_or_path_and_nothing_that_is_not_a_blob(
    stored: tuple[Path, str],
) -> None:
    from .gitrepo import git

    repo, _ = stored
    blob, tree = git(repo, "rev-parse", "HEAD:f.c"), git(repo, "rev-parse", "HEAD^{tree}")
    with open_project(repo) as project:
        assert project.git.read_blob(blob) == TEXT.encode()
        assert project.git.read_blob(tree) is None  # a tree is no text
        assert project.git.read_blob("0" * 40) is None and project.git.read_blob("not an id") is None
        head = git(repo, "rev-parse", "HEAD")
        assert project.git.read_file(head, "f.c") == TEXT.encode()
        assert project.git.read_file(head, "missing.c") is None


def review_lines(repo: Path, snap: str, path: str) -> list[dict[str, Any]]:
    """task=source's own lines of a whole file (every page, no budget in the way)."""
    args: dict[str, Any] = {
        "task": "source",
        "representation": "review",
        "file": path,
        "measurement": {"snapshot_id": snap},
        "lines": "1-100000",
        "limits": {"max_words": 50_000, "max_bytes": 2_000_000},
    }
    out: list[dict[str, Any]] = []
    while True:
        try:
            answer = row(repo, "coverage_review", **args)
        except CoverageError as error:
            assert error.details.get("file_lines") == 0  # an empty file (a package's __init__.py)
            return []
        out += [line for r in answer["data"]["ranges"] for line in r["lines"]]
        if not (answer.get("page") or {}).get("next_cursor"):
            return out
        args["cursor"] = answer["page"]["next_cursor"]


def test_every_window_is_the_lines_task_source_shows_for_every_file_of_both_snapshots(
    shop_stored: Any,
) -> None:
    repo = shop_stored.fresh()
    snaps = row(repo, "coverage_review", task="snapshots", representation="review")["data"]["snapshots"]
    assert len(snaps) == 2
    for snap in (s["snapshot_id"] for s in snaps):
        files = row(repo, "dashboard_files", snapshot=snap, limit=100)["data"]["rows"]
        for path in [f["path"] for f in files] + ["tests/test_cart.py"]:  # and a file git has, not measured
            want = review_lines(repo, snap, path)
            first = row(repo, "dashboard_source", snapshot=snap, file=path, start=1, count=7)["data"]
            assert first["file_lines"] == len(want)
            got: list[dict[str, Any]] = []
            for start in range(1, len(want) + 1, 7):  # windows of 7 lines, the last one short
                w = row(repo, "dashboard_source", snapshot=snap, file=path, start=start, count=7)["data"]
                got += [{k: line[k] for k in ("line", "status", "text")} for line in w["lines"]]
                assert w["file_lines"] == len(want)
            assert got == want, (snap, path)
