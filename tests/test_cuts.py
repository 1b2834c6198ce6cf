"""No silent drops, no hidden cuts: every argument is read or refused, every cut is flagged and continuable.

The data is real: a small package in a git repository, measured by coverage.py
(full and subset runs, on several commits and a side branch), imported into a
real store. Paged answers are walked cursor by cursor and compared with the
whole answer at a budget large enough to hold it.
"""

from __future__ import annotations

import shutil
from collections import Counter
from typing import Any

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.review_task_table import ARGUMENTS, NEEDS, TASK_NAMES
from coverage_core.operations.table import OPERATIONS
from coverage_core.review.budget import DEFAULT_MAX_BYTES, MIN_WORDS
from coverage_core.service import Service

from .gitrepo import commit, git, write
from .realcov import make_package, measure

# Fifteen functions, each with an untested return and a branch taken one way only.
MANY = "".join(f"def f{i}(x):\n    if x > {i}:\n        return {i}\n    return -1\n\n\n" for i in range(15))
EXTRA = {
    "shop/many.py": MANY,
    "tests/test_many.py": "from shop import many\n\n\ndef test_all_low():\n"
    + "".join(f"    assert many.f{i}(0) == -1\n" for i in range(15)),
}
WHOLE = {"max_words": 50_000, "max_bytes": 2_000_000, "max_files": 200, "max_regions": 500}
REVIEW = OPERATIONS["coverage_review"].input_schema["properties"]


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Commits A - B - C on main and D on a side branch from A, with a coverage.py report of each
    (A the full suite, B only the cart tests, C only the many tests, D the full suite)."""
    repo = make_package(tmp_path_factory.mktemp("cuts") / "shop")
    write(repo, EXTRA)
    with (repo / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("*.cov.json\n")  # the reports stay out of every commit
    shas = {"A": commit(repo, "many functions")}
    reports = {}

    def keep(name: str, *tests: str) -> None:
        shutil.copy(measure(repo, *tests)["json"], repo / f"{name}.cov.json")
        reports[name] = f"{name}.cov.json"

    keep("A")
    keep("D", "tests/test_cart.py::test_total_sums_prices")
    write(repo, {"shop/cart.py": (repo / "shop/cart.py").read_text() + "\n\nVAT = 20\n"})
    shas["B"] = commit(repo, "vat")
    keep("B", "tests/test_cart.py")
    shas["C"] = commit(repo, "empty")
    keep("C", "tests/test_many.py")
    git(repo, "checkout", "-q", "-b", "side", shas["A"])
    shas["D"] = commit(repo, "side")
    git(repo, "checkout", "-q", "main")
    return {"repo": repo, "shas": shas, "reports": reports}


@pytest.fixture(scope="module")
def service(history_repo: dict[str, Any]):
    """The four reports imported C, D, A, B: ingest order is not commit order; then, for the history walk, every
    report again at every commit of main in a suite of its own, "h". Once for the module, before any test:
    its tests only review, so each sees the same store whatever ran before it."""
    with open_project(history_repo["repo"]) as project:
        svc = Service(project)
        ids = {}
        for name in ("C", "D", "A", "B"):
            answer = svc.call(
                "coverage_import",
                {"report_path": history_repo["reports"][name], "commit": history_repo["shas"][name]},
            )
            ids[name] = answer["data"]["snapshot"]["snapshot_id"]
        for sha in ("A", "B", "C"):  # a longer series for the history walk
            for report in history_repo["reports"].values():
                svc.call(
                    "coverage_import",
                    {"report_path": report, "commit": history_repo["shas"][sha], "suite": "h"},
                )
        svc.ids = ids  # type: ignore[attr-defined]
        yield svc


def review(svc: Service, **args: Any) -> dict[str, Any]:
    return svc.call("coverage_review", args)


# -- unused arguments ------------------------------------------------------------------------------


def _value(name: str, schema: dict[str, Any]) -> Any:
    """A valid value of an argument, from its schema: so an argument added later is covered too."""
    if "enum" in schema:
        return schema["enum"][-1]
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "array":
        return [_value(name, schema["items"])]
    if kind == "object":
        return {k: _value(k, schema["properties"][k]) for k in schema.get("required", [])}
    if "pattern" in schema:
        return {"lines": "1", "ranges": "1"}.get(name, "1")
    return "shop/cart.py" if name == "file" else "x"


def test_the_table_of_task_arguments_covers_every_argument_and_every_task() -> None:
    declared = set(REVIEW) - {"task"}
    assert set().union(*ARGUMENTS.values()) == declared
    assert set(ARGUMENTS) == set(TASK_NAMES) == set(REVIEW["task"]["enum"])
    assert set(NEEDS) | set(NEEDS.values()) <= declared


@pytest.mark.parametrize("task", TASK_NAMES)
def test_every_argument_a_task_does_not_read_is_refused_naming_the_tasks_that_read_it(
    service: Service, task: str
) -> None:
    unused = [name for name in REVIEW if name != "task" and name not in ARGUMENTS[task]]
    for name in unused:
        args = {"task": task, name: _value(name, REVIEW[name])}
        with pytest.raises(CoverageError) as err:
            service.call("coverage_review", args)
        users = [t for t in TASK_NAMES if name in ARGUMENTS[t]]
        assert err.value.code is ErrorCode.INVALID_ARGUMENT, (task, name)
        assert f"task={task} does not use {name}" in err.value.message
        assert all(t in err.value.message for t in users) and err.value.details["used_by"] == users


def test_lines_without_file_is_refused_for_every_task_that_reads_lines(service: Service) -> None:
    for task in [t for t in TASK_NAMES if "lines" in ARGUMENTS[t]]:
        with pytest.raises(CoverageError) as err:
            review(service, task=task, lines="3")
        assert err.value.code is ErrorCode.INVALID_ARGUMENT and "lines needs file" in err.value.message


def test_lines_past_the_end_of_the_file_are_refused_with_the_files_length(
    service: Service, history_repo: dict[str, Any]
) -> None:
    length = len((history_repo["repo"] / "shop/many.py").read_text().splitlines())
    for task in [t for t in TASK_NAMES if "lines" in ARGUMENTS[t]]:
        with pytest.raises(CoverageError) as err:
            review(service, task=task, file="shop/many.py", lines=f"{length + 1}-{length + 9}")
        assert err.value.code is ErrorCode.INVALID_ARGUMENT, task
        assert f"it has {length} lines" in err.value.message and f"1-{length}" in err.value.suggestion
        review(service, task=task, file="shop/many.py", lines=f"{length}-{length + 9}")  # the end is in range


# -- flagged cuts ----------------------------------------------------------------------------------


def test_the_max_regions_cut_is_flagged_and_the_cursor_brings_every_target(service: Service) -> None:
    args = {"task": "insight", "file": "shop/many.py", "measurement": {"snapshot_id": service.ids["A"]}}
    env = service.call("coverage_review", args)
    data = env["data"]
    assert len(data["targets"]) == 5 and data["target_count"] == 15 and data["targets_truncated"] is True
    names = [t[1] for t in data["targets"]]
    while env["page"]["next_cursor"]:
        env = service.call("coverage_review", {**args, "cursor": env["page"]["next_cursor"]})
        assert env["data"]["files"] == []  # continuing targets, the file was listed already
        names += [t[1] for t in env["data"]["targets"]]
    assert sorted(names) == sorted(f"f{i}" for i in range(15)) and env["data"]["targets_truncated"] is False


def test_history_orders_points_by_commit_ancestry_and_lists_every_other_snapshot(
    service: Service, history_repo
) -> None:
    shas = history_repo["shas"]
    env = review(service, task="history", measurement={"snapshot_id": service.ids["B"]}, limits=WHOLE)
    data = env["data"]
    # Ingested C, D, A, B; along the commits through B: C descends from it, A is its parent, D is on a side branch.
    order = [data["points"][0][2]] + [r[1] for r in data["rows"]] + [data["points"][1][2]]
    assert order == [shas[n][:12] for n in ("C", "B", "A", "D")]
    assert (
        data["window"]["snapshots"] == 4
        and env["page"]["total_rows"] == 2
        and env["page"]["next_cursor"] is None
    )
    assert data["rows_truncated"] is False and data["claim_status"]


def test_task_all_keeps_each_parts_claim(service: Service) -> None:
    data = review(service, task="all", limits={"max_words": 2000})["data"]
    parts = [p for p in ("change", "insight", "history") if p in data]
    assert "history" in parts and "insight" in parts
    order = ("invalid", "not_measured", "stale", "limited", "supported")
    for part in parts:
        assert data[part]["claim_status"] in order
    assert data["claim_status"] == min((data[p]["claim_status"] for p in parts), key=order.index)


def test_an_audit_page_at_a_tight_budget_shows_a_record_or_says_what_it_truly_needs(service: Service) -> None:
    for extra in ({}, {"file": "shop/many.py"}):
        for max_words in range(MIN_WORDS, 140, 4):
            try:
                env = review(service, task="audit", limits={"max_words": max_words}, **extra)
            except CoverageError as err:
                assert err.code is ErrorCode.BUDGET_TOO_SMALL
                assert err.details["needed_words"] > max_words, err.message
                continue
            records = env["data"]["lines" if extra else "files"]
            assert records or env["page"]["next_cursor"] is None


def test_audit_honours_max_files(service: Service) -> None:
    env = review(service, task="audit", limits={"max_files": 2, "max_words": 5000})
    assert len(env["data"]["files"]) == 2 and env["page"]["next_cursor"]


# -- walking every task's cursors ------------------------------------------------------------------


def _insight_records(env: dict[str, Any]) -> list[Any]:
    out = [("file", f[0]) for f in env["data"]["files"]]
    for t in env["data"]["targets"]:
        out += [(t[0], t[1], *r[:3]) for r in t[4]]  # a partial range adds its kind and missed branches
    return out


def _insight_whole(svc: Service, args: dict[str, Any]) -> list[Any]:
    data = svc.call("coverage_review", {**args, "representation": "audit", "limits": WHOLE})["data"]
    return [("file", f["path"]) for f in data["files"]] + [
        (t["path"], t["function"], r["start"], r["end"], r["line_count"])
        for t in data["targets"]
        for r in t["ranges"]
    ]


def _history_records(env: dict[str, Any]) -> list[Any]:
    return [tuple(r) for r in env["data"]["rows"]]


def _file_records(env: dict[str, Any]) -> list[Any]:
    out = []
    for table in ("lines", "branches", "functions", "regions"):
        columns = env["data"][table]
        out += [(table, *row) for row in zip(*columns.values())]
    return out


def _tests_records(env: dict[str, Any]) -> list[Any]:
    return [("t", *r) for r in env["data"]["tests"]] + [("o", *r) for r in env["data"]["only_one_test"]]


def _listed(key: str):
    return lambda env: [tuple(map(str, r)) if isinstance(r, list) else str(r) for r in env["data"][key]]


WALKS = {
    "insight": ({"task": "insight"}, _insight_records),
    "history": ({"task": "history"}, _history_records),
    "tests": ({"task": "tests", "file": "shop/cart.py"}, _tests_records),
    "audit": ({"task": "audit"}, _listed("files")),
    "audit of a file": ({"task": "audit", "file": "shop/many.py"}, _listed("lines")),
    "source": (
        {"task": "source", "file": "shop/many.py", "lines": "1-60"},
        lambda env: [tuple(map(str, ln)) for r in env["data"]["ranges"] for ln in r["lines"]],
    ),
    "files": ({"task": "files"}, _listed("files")),
    "snapshots": ({"task": "snapshots"}, _listed("snapshots")),
    "file": ({"task": "file", "file": "shop/many.py"}, _file_records),
    "change": ({"task": "change"}, lambda env: [tuple(map(str, r)) for r in env["data"]["files"]]),
}


def _cursors(env: dict[str, Any]) -> list[str]:
    found = [env["page"]["next_cursor"]] if env.get("page") and env["page"].get("next_cursor") else []
    if env["data"].get("task") == "insight":
        found += [t[7] for t in env["data"]["targets"] if t[7]]
    return found


def _walk(svc: Service, args: dict[str, Any], max_words: int, records) -> list[Any]:
    """Every record of every page reached from the first one by any cursor, each cursor followed once."""
    limits = {**args.get("limits", {}), "max_words": max_words}
    pending, seen, out = [None], set(), []
    while pending:
        cursor = pending.pop(0)
        env = svc.call(
            "coverage_review", {**args, "limits": limits, **({"cursor": cursor} if cursor else {})}
        )
        out += records(env)
        for c in _cursors(env):
            if c not in seen:
                seen.add(c)
                pending.append(c)
        assert len(seen) < 500, "the cursors do not end"
    return out


def _smallest_walk(svc: Service, args: dict[str, Any], records) -> tuple[int, list[Any]]:
    """The smallest word budget at which every page answers, and the records at it. Every refusal
    on the way must be honest: what it says a page needs is more than the budget it had."""
    for max_words in range(MIN_WORDS, 3000, 5):
        try:
            return max_words, _walk(svc, args, max_words, records)
        except CoverageError as err:
            assert err.code is ErrorCode.BUDGET_TOO_SMALL, err.message
            assert err.details["needed_words"] > max_words or err.details["needed_bytes"] > DEFAULT_MAX_BYTES
    raise AssertionError("no budget answers")


@pytest.mark.parametrize("name", list(WALKS))
def test_every_tasks_cursors_walk_to_the_end_at_its_smallest_budget_with_nothing_duplicated_or_missing(
    service: Service, history_repo: dict[str, Any], name: str
) -> None:
    """Seed: "Collections use bounded fetches, word budgets, and opaque query-scoped cursors." """
    args, records = WALKS[name]
    if name in ("history", "file", "files", "tests", "audit", "audit of a file", "source"):
        args = {**args, "measurement": {"snapshot_id": service.ids["A" if name != "history" else "B"]}}
    if name == "change":  # both sides named: B (the cart tests only) against A (the whole suite)
        args = {
            **args,
            "measurement": {"snapshot_id": service.ids["B"]},
            "baseline": {"kind": "explicit", "snapshot_id": service.ids["A"]},
        }
    if name == "history":  # the longer series the module's store holds in suite "h"
        args = {**args, "measurement": {"suite": "h"}}
    budget, walked = _smallest_walk(service, args, records)
    if name == "insight":
        whole = _insight_whole(service, args)
    elif name == "history":
        data = service.call("coverage_review", {**args, "limits": WHOLE})["data"]
        whole = [tuple(r) for r in data["rows"]]
    else:
        whole = records(service.call("coverage_review", {**args, "limits": WHOLE}))
    dupes = [r for r, n in Counter(walked).items() if n > 1]
    assert not dupes, (budget, dupes[:5])
    assert sorted(walked, key=repr) == sorted(whole, key=repr), budget
    if name not in ("insight", "file"):  # (their pages hold several lists)
        assert walked == whole  # and in the whole answer's order
    if name == "history":
        assert len(walked) == 10 and budget < 3000
