"""Which characters a registration's words may hold, and the one way a word is shown to a person.

A person approves what they read, so nothing in a registration may move a
terminal's cursor, reorder text or hide under padding. Refused everywhere: C0
and C1 control characters and DEL (Unicode category Cc), format and bidi
controls (Cf: U+200B-U+200F, U+202A-U+202E, U+2066-U+2069, U+FEFF, ...),
surrogates (Cs), line and paragraph separators (Zl, Zp) and the fillers that
render as nothing (``INVISIBLE``). Argv words and env values may hold LF and
TAB, which multi-line ``sh -c`` and ``python -c`` scripts need; every other
part of a registration (name, cwd, env names, artifact paths, suites,
selector roots) holds neither.

``quoted`` is the only rendering of a word: single-quoted, with a backslash
escape for the quote and the backslash, LF, TAB, CR, every character outside
printable ASCII (``\\x1b``, ``\\u0085``, ``\\u202e``, ``\\u00e9``), and every space of a run of
two or more (``\\x20``), so padding is counted, not seen.
"""

from __future__ import annotations

import unicodedata

from ..errors import CoverageError, ErrorCode

# Hangul fillers, the Braille blank, the halfwidth Hangul filler, combining grapheme joiner and Khmer inherent
# vowels: letters or marks to Unicode, nothing on a screen.
INVISIBLE = frozenset("\u115f\u1160\u3164\u2800\uffa0\u034f\u17b4\u17b5\u180e")
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
MULTILINE_ALLOWED = frozenset("\n\t")


def _name(char: str) -> str:
    code = f"U+{ord(char):04X}"
    try:
        return f"{code} {unicodedata.name(char)}"
    except ValueError:
        return code


def refused_char(text: str, *, multiline: bool = False) -> str | None:
    """A description of the first character of ``text`` a registration may not hold, or None."""
    for char in text:
        if multiline and char in MULTILINE_ALLOWED:
            continue
        if char in INVISIBLE or unicodedata.category(char) in REFUSED_CATEGORIES:
            return f"the character {_name(char)}"
    return None


def check(text: str, what: str, *, multiline: bool = False) -> str:
    """``text`` when it holds no refused character; else ``invalid_argument`` naming the character."""
    found = refused_char(text, multiline=multiline)
    if found is not None:
        allowed = " (LF and TAB are allowed only in argv words and env values)" if not multiline else ""
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {quoted(text[:200])} holds {found}: control, format, bidi and invisible characters are "
            f"refused, so what a person reads at approval is what runs{allowed}",
            "Remove the character; write the word in plain text.",
            {"argument": what},
        )
    return text


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if 0x20 <= code < 0x7F:
        return char
    if code < 0x80:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def quoted(word: str) -> str:
    """``word`` single-quoted, every character that is not plain printable ASCII escaped (and each space of a
    run of spaces): the only way a registration's words reach a person."""
    out = []
    for i, char in enumerate(word):
        spaced = char == " " and (word[i - 1 : i] == " " or word[i + 1 : i + 2] == " ")
        out.append("\\x20" if spaced else _escaped(char))
    return "'" + "".join(out) + "'"


def quoted_line(words: list[str]) -> str:
    """Several words on one line, each quoted (the runs view's case arguments)."""
    return " ".join(quoted(w) for w in words)
