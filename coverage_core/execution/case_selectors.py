"""Case arguments under ``args_policy: selectors``, and the checkout paths a registration names.

A selector is one word (the README's "Selectors" states the same grammar)::

    selector = path [ "::" node ]
    node     = name *( "::" name ) [ "[" param "]" ]
    name     = a letter, digit or "_", then letters, digits, "_", "." or "-" (Unicode letters and digits)
    param    = one or more characters up to the word's final "]", with no LF, TAB, control, format or
               invisible character; a space in it is a single U+0020 followed by a letter, digit or "_",
               and a param holding a space holds no "/"

``path`` names an existing file or folder, relative to the registered ``cwd``
(where the command runs, so where the runner resolves it) or absolute; its
real path lies inside the checkout, inside one of the registration's
``selector_roots`` when it declares them, and is reached through no
symbolic link. It holds no whitespace and never starts with ``-``, ``@``,
``+`` or ``~`` (an option, an argument file, a plus option, a home folder).

The accepted word is rewritten to its canonical form, ``./<path relative to
cwd>[::node]`` (``.`` for the cwd itself), before it reaches argv: a word
starting with ``./`` is never an option or an argument file to an argparse,
getopt or ``@file`` runner (pytest's ``fromfile_prefix_chars``, ``java
@file``, ``dotnet @file.rsp``, gcc and clang), and ``--`` would not have helped
(argparse expands ``@file`` before it looks at ``--``). The canonical form is
checked again when the run starts (``recheck``): a file swapped for a link
while the run waited is refused then. The param rules keep a parameter id
that a word-splitting wrapper splits at its space from yielding an option, an
argument file or a path elsewhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import CoverageError, ErrorCode
from . import words
from .records import CommandSpec

MAX_ARGS = 64
MAX_WORD = 4096
MAX_ROOTS = 16
_NODE = re.compile(r"\w[\w.\-]*(?:::\w[\w.\-]*)*(?:\[(?P<param>.+)\])?", re.DOTALL)
_PREFIXES = ("-", "@", "+", "~")


def _bad(message: str, **details: Any) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        message,
        "Pass selectors such as tests/test_x.py or tests/test_x.py::test_y[param], relative to the command's cwd.",
        details,
    )


def real_inside(root: Path, base: Path, text: str, what: str) -> Path:
    """The real path ``text`` names (relative to ``base``, or absolute): inside the checkout ``root`` and reached
    through no symbolic link, or an error (``path_outside_checkout``, or ``invalid_argument`` for a link).
    ``root`` is a real path; the named path need not exist."""
    full = Path(os.path.normpath(base / text))
    real = Path(os.path.realpath(full))
    for candidate in (real, full):
        if not candidate.is_relative_to(root):
            raise CoverageError(
                ErrorCode.PATH_OUTSIDE_CHECKOUT,
                f"{what} {words.quoted(text)} is outside the checkout {root}"
                + (" (through a symbolic link)" if candidate is real and full.is_relative_to(root) else ""),
                "Use a path inside the checkout.",
                {"argument": what, "checkout_path": str(root)},
            )
    if real != full:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {words.quoted(text)} goes through a symbolic link (its real path is "
            f"{words.quoted(str(real.relative_to(root)))}); paths a command uses are named without links, so what "
            "was approved is what it reads",
            "Name the real path inside the checkout.",
            {"argument": what},
        )
    return real


def checkout_path(root: Path, text: str, what: str, *, allow_root: bool = False) -> str:
    """``text`` (relative to the checkout ``root``, or absolute inside it) as the normalized relative path a
    registration stores; refused outside the checkout or through a link."""
    real = real_inside(root, root, text, what)
    if real == root and not allow_root:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {words.quoted(text)} names the checkout itself",
            "Name a file inside the checkout.",
            {"argument": what},
        )
    rel = real.relative_to(root)
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


def selector_roots(root: Path, value: Any) -> list[str]:
    """A registration's ``selector_roots``: 1 to 16 existing folders or files inside the checkout, no link."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_ROOTS:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"selector_roots must list 1 to {MAX_ROOTS} paths inside the checkout",
            'e.g. ["tests"]',
            {"argument": "selector_roots"},
        )
    out = []
    for item in value:
        if not isinstance(item, str) or not item or len(item) > MAX_WORD:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "each selector root is a non-empty path inside the checkout",
                'e.g. ["tests"]',
                {"argument": "selector_roots"},
            )
        words.check(item, "selector root")
        rel = checkout_path(root, item, "selector root", allow_root=True)
        if not os.path.exists(root / rel):
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"selector root {words.quoted(item)} does not exist in the checkout",
                "Name an existing folder, such as tests.",
                {"argument": "selector_roots"},
            )
        out.append(rel)
    if len(set(out)) != len(out):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "a selector root is listed twice",
            "List each folder once.",
            {"argument": "selector_roots"},
        )
    return out


def canonical(word: Any, *, root: Path, cwd: str, roots: Sequence[str] | None) -> str:
    """The canonical form of one selector (see the module docstring), or ``invalid_argument`` /
    ``path_outside_checkout`` saying why it is refused. ``root`` is the checkout's real path, ``cwd`` the
    registration's (relative to it)."""
    if not isinstance(word, str) or not word or len(word) > MAX_WORD:
        raise _bad(
            f"a selector is a non-empty string of at most {MAX_WORD} characters, not {str(word)[:100]!r}"
        )
    found = words.refused_char(word)
    if found is not None:
        raise _bad(f"it holds {found}")
    if word.startswith(_PREFIXES):
        raise _bad(
            f"it starts with {word[0]!r}: an option, argument file or home folder to a runner, never a selector"
        )
    path, sep, node = word.partition("::")
    if not path:
        raise _bad("it has no path before '::'")
    if any(c.isspace() for c in path):
        raise _bad("its path holds whitespace (a wrapper that splits words would make it several)")
    if sep:
        match = _NODE.fullmatch(node)
        if match is None:
            raise _bad(
                "its node part is not name(::name)*[param] (names of letters, digits, '_', '.', '-'; a "
                "non-empty param in brackets at the end)"
            )
        _check_param(match.group("param"))
    base = root / cwd
    real = real_inside(root, base, path, "the selector")
    if not os.path.exists(real):
        raise _bad(
            f"{words.quoted(path)} names nothing under the command's cwd {words.quoted(cwd)} (selectors are "
            "resolved against the registered cwd, where the command runs)"
        )
    if roots and not any(real.is_relative_to(root / r) for r in roots):
        raise _bad(
            f"{words.quoted(path)} is outside the registration's selector_roots "
            f"({', '.join(words.quoted(r) for r in roots)})"
        )
    rel = PurePosixPath(*Path(os.path.relpath(real, base)).parts).as_posix()
    return ("." if rel == "." else "./" + rel) + (sep + node if sep else "")


def _check_param(param: str | None) -> None:
    if param is None:
        return
    if any(c.isspace() and c != " " for c in param):
        raise _bad("its param holds whitespace other than a plain space")
    for i, char in enumerate(param):
        if char == " " and not (param[i + 1 : i + 2].isalnum() or param[i + 1 : i + 2] == "_"):
            raise _bad(
                "a space in its param is not followed by a letter, digit or '_' (a wrapper that splits words "
                "would make an option, argument file or pattern of what follows)"
            )
    if " " in param and "/" in param:
        raise _bad(
            "its param holds both a space and '/' (a wrapper that splits words would make a path of it)"
        )


def canonical_args(root: Path, spec: CommandSpec, args: Any) -> list[str]:
    """The case arguments a run gets, each in canonical form, or an error naming the command's policy."""
    policy = spec.args_policy
    if args is None or args == []:
        return []
    if policy == "none":
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "this command's args_policy is none: it takes no case arguments",
            "Run it without args, or register a command with args_policy 'selectors' for test selections.",
            {"args_policy": policy},
        )
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"args is a list of at most {MAX_ARGS} selectors",
            "Select fewer tests per run.",
            {"args_policy": policy},
        )
    out = []
    for arg in args:
        try:
            out.append(canonical(arg, root=root, cwd=spec.cwd, roots=spec.selector_roots))
        except CoverageError as error:
            shown = words.quoted(arg[:200]) if isinstance(arg, str) else repr(arg)[:100]
            raise CoverageError(
                error.code,
                f"case argument {shown} is refused by args_policy selectors: {error.message}",
                error.suggestion,
                {"args_policy": policy, "argument": arg[:200] if isinstance(arg, str) else repr(arg)[:200]},
            ) from None
    return out


def recheck(root: Path, spec: CommandSpec, args: list[str]) -> str | None:
    """When the run starts: why its canonical selectors no longer hold (a file swapped for a link, removed,
    moved outside the roots), or None."""
    for arg in args:
        try:
            again = canonical(arg, root=root, cwd=spec.cwd, roots=spec.selector_roots)
        except CoverageError as error:
            return f"case argument {words.quoted(arg)} no longer holds when the run starts: {error.message}"
        if again != arg:
            return f"case argument {words.quoted(arg)} now resolves to {words.quoted(again)}"
    return None


def recheck_paths(root: Path, spec: CommandSpec, artifact_paths: Sequence[str]) -> str | None:
    """When the run starts: why the registered cwd or an artifact path is no longer inside the checkout without
    a link (or the cwd no folder), or None."""
    try:
        cwd = real_inside(root, root, spec.cwd, "cwd")
        if not cwd.is_dir():
            return f"its cwd {words.quoted(spec.cwd)} is no longer a folder of the checkout"
        for path in artifact_paths:
            real_inside(root, root, path, "artifact path")
    except CoverageError as error:
        return f"{error.message} (checked when the run starts)"
    return None
