"""The identity of a command's executable: what ``argv[0]`` resolves to, bound at approval, checked at spawn.

A person approves a program, not a name: ``python`` means whatever the run's
PATH finds first, and a file there can be replaced after approval. At
approval ``argv[0]`` is resolved as ``execvp`` would resolve it in the run
(PATH entries, relative ones against the run's cwd; a word with ``/``
against the cwd) to an absolute path, and recorded with its real path and
the SHA-256 of its content. When a run starts it is resolved again; a
different path, real path or content refuses the run with the reason, and
the command is spawned through the absolute path. The approved executable
may live outside the checkout and behind links (``/usr/bin/python3``, a
venv's ``bin/python``): its identity, not its place, is what is checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..errors import CoverageError, ErrorCode
from . import words
from .records import CommandSpec


@attrs.frozen
class Executable:
    path: str  # the absolute path argv[0] resolved to (links kept: a venv's python finds its venv through it)
    real_path: str
    sha256: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "real_path": self.real_path, "sha256": self.sha256}

    @classmethod
    def of(cls, value: Any) -> Executable | None:
        if not isinstance(value, dict) or set(value) != {"path", "real_path", "sha256"}:
            return None
        return cls(str(value["path"]), str(value["real_path"]), str(value["sha256"]))


def search_path(spec: CommandSpec, environ: Mapping[str, str] = os.environ) -> str:
    """The PATH a run of ``spec`` gets (its registered PATH, else this process's): the one approval resolves
    through, the same ``worker.command_env`` hands the run."""
    return str(spec.env.get("PATH", environ.get("PATH", os.defpath)))


# Displays (the dashboard lists up to 50 pending commands on every refresh) reuse a file's hash while its status
# is the same; approval and spawn always hash the file afresh.
_HASHES: dict[tuple[str, int, int, int, int], str] = {}
_MAX_HASHES = 256


def _digest(path: str, *, cached: bool = False) -> str:
    if cached:
        st = os.stat(path)
        key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        found = _HASHES.get(key)
        if found is None:
            found = _digest(path)
            if len(_HASHES) >= _MAX_HASHES:
                _HASHES.clear()
            _HASHES[key] = found
        return found
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def resolve(program: str, *, cwd: Path, path: str, cached: bool = False) -> Executable:
    """``program`` resolved as the run's ``execvp`` would (``path`` is the run's PATH, ``cwd`` its directory),
    with its identity; ``not_found`` when nothing runnable answers to it."""
    if "/" in program:
        candidates = [os.path.normpath(cwd / program)]
    else:
        candidates = [os.path.normpath(cwd / (entry or ".") / program) for entry in path.split(os.pathsep)]
    for candidate in candidates:
        if _runnable(candidate):
            try:
                return Executable(candidate, os.path.realpath(candidate), _digest(candidate, cached=cached))
            except OSError:
                continue
    where = "relative to the cwd" if "/" in program else "on the run's PATH"
    raise CoverageError(
        ErrorCode.NOT_FOUND,
        f"argv[0] {words.quoted(program)} names no executable file {where}",
        "Install the program, or register the command with its absolute path, then approve it.",
        {"argument": "argv", "program": program},
    )


def difference(approved: Executable, now: Executable) -> str | None:
    """Why ``now`` is not the approved executable, or None when it is."""
    if approved.path != now.path:
        return f"argv[0] now resolves to {words.quoted(now.path)}, approved was {words.quoted(approved.path)}"
    if approved.real_path != now.real_path:
        return (
            f"{words.quoted(now.path)} now leads to {words.quoted(now.real_path)}, approved was "
            f"{words.quoted(approved.real_path)}"
        )
    if approved.sha256 != now.sha256:
        return (
            f"the content of {words.quoted(now.real_path)} changed since approval (sha256 {now.sha256[:16]}..., "
            f"approved {approved.sha256[:16]}...)"
        )
    return None
