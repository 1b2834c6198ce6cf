"""The ``baseline`` selector as a command line spells it: its kinds and the one parser of ``--baseline``.

A selector names what a comparison is made with (``review.baseline`` resolves it to stored snapshots). It
lives apart from that resolution so the command line can read and print selectors (and the service's
schemas can list the kinds) without importing pygit2, DuckDB and the records.
"""

from __future__ import annotations

from typing import Any, cast

from ..errors import CoverageError, ErrorCode
from ..ids import SNAPSHOT_PREFIX

# Kinds that take no argument, so their name alone selects them on a command line.
NAMED_KINDS = ("previous_snapshot", "parent_commit", "worktree_base", "none")
KINDS = ("explicit", *NAMED_KINDS[:2], "ref", "merge_base", *NAMED_KINDS[2:])
MERGE_BASE_PREFIX = "merge_base:"
SELECTOR_HELP = (
    "a snapshot id (snap-...); one of " + ", ".join(NAMED_KINDS) + "; merge_base:REF (or REF with "
    "--merge-base) for the merge-base of REF and the current commit; anything else is a git ref "
    "(branch, tag or commit)"
)


def parse_selector(text: str, *, merge_base: bool = False) -> dict[str, Any]:
    """The ``baseline`` spec a command line's ``--baseline TEXT [--merge-base]`` names.

    One rule for every command: a ``snap-`` id is ``explicit``; a kind that
    takes no argument (``NAMED_KINDS``) is that kind; ``merge_base:REF`` (or
    ``--merge-base``) is ``merge_base`` of REF; anything else is a git ``ref``.
    """
    if text.startswith(MERGE_BASE_PREFIX):
        ref = text[len(MERGE_BASE_PREFIX) :]
        if not ref:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"--baseline {text!r} names no ref",
                "Write merge_base:REF, e.g. --baseline merge_base:main.",
            )
        return {"kind": "merge_base", "ref": ref}
    if text.startswith(SNAPSHOT_PREFIX) or text in NAMED_KINDS:
        if merge_base:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"--merge-base needs a git ref as --baseline, not {text!r}",
                "Pass --baseline main --merge-base, or drop --merge-base.",
            )
        return (
            {"kind": "explicit", "snapshot_id": text} if text.startswith(SNAPSHOT_PREFIX) else {"kind": text}
        )
    return {"kind": "merge_base" if merge_base else "ref", "ref": text}


def selector_text(spec: dict[str, Any]) -> str:
    """The ``--baseline`` text of a spec (``parse_selector``'s inverse, for spec kinds a command line can name)."""
    kind: str = spec["kind"]
    if kind == "explicit" and "snapshot_id" in spec:
        return cast(str, spec["snapshot_id"])
    if kind == "merge_base":
        return MERGE_BASE_PREFIX + cast(str, spec.get("ref", ""))
    if kind == "ref":
        return cast(str, spec.get("ref", ""))
    return kind
