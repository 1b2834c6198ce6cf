"""docs/seed-invariants.md stays true: each statement is the seed's, and what it names exists and says so.

The page maps every checkable statement of the architecture seed to the tests that prove it, to a
README section reasoning a deviation, or to "not implemented". These checks read files only (no
store, no daemon): every test named exists, as a module-level function of its file, and its
docstring quotes the statement (or each **bold** part of it); every deviation names a README section
that exists and holds the phrase given as its reason; the page's counts are its rows'. That every
quoted statement is the seed's own text is checked where ``ARCHITECTURE_SEED`` names the seed: the
checkout keeps no copy of it and reads nothing beside itself.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "seed-invariants.md"
README = ROOT / "README.md"
SEED_NAME = "coverage-mcp-architecture.md"

ROW = re.compile(r'^- ([A-Z]\d+[a-z]?) "(.*)"$')
EVIDENCE = re.compile(r"^  - (test|deviation|not implemented): (.*)$")
TEST_REF = re.compile(r"^`(tests/[\w/]+\.py)::(\w+)(\[[^\]]*\])?`$")
DEVIATION_REF = re.compile(r'^\[README: ([^\]]+)\]\(\.\./README\.md#([\w-]+)\) "(.+)"$')
BOLD = re.compile(r"\*\*(.+?)\*\*")


@attrs.frozen
class Statement:
    """One row of the page: its id, its text (marks removed), the parts a docstring must quote, what proves it."""

    ident: str
    text: str
    quoted: tuple[str, ...]
    tests: tuple[tuple[str, str], ...]
    deviations: tuple[tuple[str, str, str], ...]
    missing: tuple[str, ...]


def flat(text: str) -> str:
    """Whitespace collapsed, so a sentence wrapped in a docstring still matches the seed's line."""
    return " ".join(text.split())


def statements(page: str) -> list[Statement]:
    """Every row of the page, with the evidence lines under it; a malformed evidence line fails here."""
    rows: list[Statement] = []
    current: dict[str, list] | None = None
    head: tuple[str, str] | None = None

    def close() -> None:
        if head is not None and current is not None:
            ident, raw = head
            bold = tuple(flat(b) for b in BOLD.findall(raw))
            text = flat(BOLD.sub(r"\1", raw))
            rows.append(
                Statement(
                    ident,
                    text,
                    bold or (text,),
                    tuple(current["test"]),
                    tuple(current["deviation"]),
                    tuple(current["not implemented"]),
                )
            )

    for number, line in enumerate(page.splitlines(), 1):
        row = ROW.match(line)
        if row:
            close()
            head, current = (row[1], row[2]), {"test": [], "deviation": [], "not implemented": []}
            continue
        evidence = EVIDENCE.match(line)
        if evidence:
            assert current is not None, f"line {number}: evidence before any statement"
            kind, ref = evidence[1], evidence[2]
            if kind == "test":
                found = TEST_REF.match(ref)
                assert found, f"line {number}: a test is named as `tests/file.py::test_name`: {ref}"
                current["test"].append((found[1], found[2]))
            elif kind == "deviation":
                found = DEVIATION_REF.match(ref)
                assert found, f'line {number}: a deviation is [README: title](../README.md#anchor) "phrase"'
                current["deviation"].append((found[1], found[2], found[3]))
            else:
                current["not implemented"].append(ref)
        elif line.startswith("  - "):
            raise AssertionError(f"line {number}: not test:, deviation: or not implemented:: {line}")
    close()
    return rows


@functools.cache
def rows() -> list[Statement]:
    return statements(PAGE.read_text(encoding="utf-8"))


def seed_text() -> str | None:
    """The seed, where ``ARCHITECTURE_SEED`` names it (the checkout holds no copy and reads nothing beside it)."""
    named = os.environ.get("ARCHITECTURE_SEED")
    if named and Path(named).is_file():
        return Path(named).read_text(encoding="utf-8")
    return None


@functools.cache
def docstrings(path: str) -> dict[str, str | None]:
    """Each module-level test function of ``path`` with its docstring (None when it has none)."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {
        node.name: ast.get_docstring(node)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def readme_sections(text: str) -> dict[str, str]:
    """The README's sections by anchor, each with its text up to the next heading of any level."""
    sections: dict[str, list[str]] = {}
    body: list[str] = []
    for line in text.splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading:
            body = sections.setdefault(slug(heading[1]), [])
        body.append(line)
    return {anchor: flat("\n".join(lines)) for anchor, lines in sections.items()}


def problems_of(statement: Statement, readme: dict[str, str]) -> list[str]:
    """What is wrong with one row's evidence: a test missing or not quoting, a deviation not in the README."""
    found: list[str] = []
    if not (statement.tests or statement.deviations or statement.missing):
        found.append(f"{statement.ident}: no test, deviation or 'not implemented'")
    for path, name in statement.tests:
        if not (ROOT / path).is_file():
            found.append(f"{statement.ident}: {path} does not exist")
            continue
        functions = docstrings(path)
        if name not in functions:
            found.append(f"{statement.ident}: {path} has no function {name}")
            continue
        doc = flat(functions[name] or "")
        for part in statement.quoted:
            if part not in doc:
                found.append(f"{statement.ident}: the docstring of {path}::{name} does not quote {part!r}")
    for title, anchor, phrase in statement.deviations:
        if anchor not in readme:
            found.append(f"{statement.ident}: the README has no section #{anchor} ({title})")
        elif slug(title) != anchor:
            found.append(f"{statement.ident}: the README section {title!r} is #{slug(title)}, not #{anchor}")
        elif flat(phrase) not in readme[anchor]:
            found.append(f"{statement.ident}: README #{anchor} does not say {phrase!r}")
    return found


def test_the_page_has_one_row_per_statement_each_with_a_unique_id_and_some_evidence() -> None:
    idents = [s.ident for s in rows()]
    assert len(idents) >= 100 and len(set(idents)) == len(idents)
    assert all(s.tests or s.deviations or s.missing for s in rows())


def test_the_pages_counts_are_those_of_its_rows() -> None:
    listed = rows()
    counts = re.search(
        r"In all: (\d+) statements; (\d+) proved by tests, (\d+) with a reasoned deviation \((\d+) of them with"
        r" no test:.*?\), (\d+) in part not implemented",
        flat(PAGE.read_text(encoding="utf-8")),
    )
    assert counts, "the page's summary line is missing"
    assert tuple(int(n) for n in counts.groups()) == (
        len(listed),
        sum(1 for s in listed if s.tests),
        sum(1 for s in listed if s.deviations),
        sum(1 for s in listed if s.deviations and not s.tests),
        sum(1 for s in listed if s.missing),
    )


def test_every_statement_on_the_page_is_the_seeds_own_text() -> None:
    seed = seed_text()
    if seed is None:
        pytest.skip(f"ARCHITECTURE_SEED does not name the seed ({SEED_NAME}) to check the quotes against")
    text = flat(seed)
    assert [s.ident for s in rows() if s.text not in text] == []


def test_every_named_test_exists_and_quotes_its_statement_and_every_deviation_is_in_the_readme() -> None:
    readme = readme_sections(README.read_text(encoding="utf-8"))
    assert [problem for s in rows() for problem in problems_of(s, readme)] == []


def test_a_renamed_test_a_dropped_quote_and_a_missing_deviation_are_each_reported(tmp_path: Path) -> None:
    """The check can fail: a page naming a function that is not there, a docstring without the quote,
    and a README section without the deviation's phrase each give their own problem."""
    page = (
        '- X1 "Unknown parents are errors."\n'
        "  - test: `tests/test_seed_invariants.py::test_that_was_renamed`\n"
        "  - test: `tests/test_seed_invariants.py::test_every_statement_on_the_page_is_the_seeds_own_text`\n"
        '  - deviation: [README: Settings](../README.md#settings) "no such phrase in that section"\n'
        '- X2 "Nothing proves this."\n'
    )
    one, two = statements(page)
    readme = readme_sections(README.read_text(encoding="utf-8"))
    assert problems_of(one, readme) == [
        "X1: tests/test_seed_invariants.py has no function test_that_was_renamed",
        "X1: the docstring of tests/test_seed_invariants.py::test_every_statement_on_the_page_is_the_seeds_own_text"
        " does not quote 'Unknown parents are errors.'",
        "X1: README #settings does not say 'no such phrase in that section'",
    ]
    assert problems_of(two, readme) == ["X2: no test, deviation or 'not implemented'"]
