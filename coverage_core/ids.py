"""The public ids of a snapshot and of a registered command: one prefix and one pattern each, for every
surface.

The ``snap-`` prefix is something no git ref or abbreviated hash can be, so
one option (``--baseline``, ``measurement``) can take either. Stdlib only.
"""

from __future__ import annotations

import re
import secrets

SNAPSHOT_PREFIX = "snap-"
SNAPSHOT_ID = r"snap-[0-9a-f]{1,64}"  # for route patterns and URI templates
SNAPSHOT_ID_PATTERN = f"^{SNAPSHOT_ID}$"  # for JSON Schema
_FULL = re.compile(SNAPSHOT_ID_PATTERN)
# A registered command: "cmd-" and the first 16 hex digits of its content hash (execution.commands).
COMMAND_ID_PATTERN = "^cmd-[0-9a-f]{16}$"  # for JSON Schema and the command lookups


def new_snapshot_id() -> str:
    return SNAPSHOT_PREFIX + secrets.token_hex(8)


def is_snapshot_id(text: str) -> bool:
    return bool(_FULL.match(text))
