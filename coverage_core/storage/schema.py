"""The project store's schema: one revision number, commented DDL, ordered migrations.

History:
    1  snapshots with git identity, files, line/branch/function/region detail,
       named tests and their observations, worktrees, settings.
    2  duplicate-test groups (tests with identical ordered item lists),
       computed at ingest so duplicate-test questions are reads.
    3  uncovered ranges (runs of uncovered executable lines, and hit lines
       with untaken branches) and their grouping into per-function targets,
       computed at ingest so insight is a read.
    4  content identity of the measured text: ``files.content_blob`` (the git
       blob id of the text the report measured) and ``file_texts`` (that text,
       zstd-compressed, for files measured with uncommitted edits).
    5  managed execution: registered commands and their decisions, runs, their
       state transitions and the artifacts each run ingested.
    6  composite snapshots (``composite_snapshots``), their inventory entries
       (``composite_entries``) and canonical regions (``composite_regions``).
    7  compaction: ``snapshot_payloads`` (a snapshot's detail rows as one zstd
       frame of NumPy columns, the rows themselves deleted in the same
       transaction) and ``compaction_passes`` (durable status of each pass).
    8  a run's composite artifact: ``run_artifacts.kind``, ``composite_snapshot_id``
       and the per-report ``reports``.
    9  the executable an approval binds: ``command_decisions.executable``
       (argv[0]'s absolute path, real path and content hash at approval).
    10 payload integrity: ``snapshot_payloads.content_sha256`` (the SHA-256 of
       the decompressed frame, checked on every restore) and ``digest_origin``
       ('compaction', or 'migration' for payloads compacted before revision 10,
       whose digest vouches only for their bytes as this migration found them);
       ``composite_snapshots.saturated`` (a region's summed hits were clamped).
    11 the producing tool's numbers: ``files.headline_found``/``headline_hit`` (each
       file's headline by its tool's rule, coverage_core.headline), ``files.excluded``
       and ``excluded_lines`` (the lines the tool excluded, coverage.py's
       ``excluded_lines``).

Each migration runs with its revision bump in one transaction. A store whose
revision is newer than ``SCHEMA_REVISION`` is refused, never downgraded.
The ``schema_revision`` table is also our mark: a DuckDB file that has tables
but no ``schema_revision`` was made by another program (the Python
predecessor of this tool keeps its store at the same path) and is refused.

Detail tables are keyed by the snapshot's integer ``snap`` (not its text id)
and inserted in (snap, file_id, line) order, so DuckDB's zone maps make a
snapshot's rows a contiguous range. They carry no index: bulk inserts from
columnar arrays stay fast.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from ..errors import CoverageError, ErrorCode
from . import payload_tables
from .payload import _FLOOR, _SLACK, digest
from .transactions import transaction

SCHEMA_REVISION = 12

_REVISION_1 = """
-- Key/value project settings (JSON values), scoped to the repository.
CREATE TABLE settings (
    key        VARCHAR PRIMARY KEY,
    value      JSON NOT NULL
);

-- Every worktree that ever ingested into this repository's store.
CREATE TABLE worktrees (
    worktree_id VARCHAR PRIMARY KEY,
    path        VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    first_seen  TIMESTAMPTZ NOT NULL,
    last_seen   TIMESTAMPTZ NOT NULL
);

-- Immutable coverage snapshots: one ingested report, with its git provenance.
CREATE TABLE snapshots (
    snap            INTEGER PRIMARY KEY,      -- internal key of detail rows
    snapshot_id     VARCHAR NOT NULL UNIQUE,  -- public id, 'snap-' prefixed
    created_at      TIMESTAMPTZ NOT NULL,
    suite           VARCHAR NOT NULL,
    format          VARCHAR NOT NULL,
    tool            VARCHAR,
    scope           VARCHAR NOT NULL,         -- 'complete' | 'subset'
    provenance      VARCHAR NOT NULL,         -- 'import' | 'run'
    commit_sha      VARCHAR,                  -- NULL only in a repository without commits
    branch          VARCHAR,
    dirty           BOOLEAN NOT NULL,
    worktree_id     VARCHAR NOT NULL,
    artifact_path   VARCHAR,
    artifact_sha256 VARCHAR NOT NULL,
    artifact_bytes  BIGINT NOT NULL,
    file_count      INTEGER NOT NULL,
    mapped_files    INTEGER NOT NULL,
    ambiguous_files INTEGER NOT NULL,
    unmapped_files  INTEGER NOT NULL,
    test_count      INTEGER NOT NULL,
    warnings        JSON NOT NULL,            -- [{code, message}]
    metadata        JSON NOT NULL             -- report facts (source roots, ...)
);

-- The producing tool's totals of a snapshot, one row per counter.
CREATE TABLE snapshot_totals (
    snap    INTEGER NOT NULL,
    counter VARCHAR NOT NULL,                 -- lines, branches, functions, ...
    found   BIGINT NOT NULL,
    hit     BIGINT NOT NULL
);

-- Files of a snapshot, with per-file summary counts.
CREATE TABLE files (
    snap              INTEGER NOT NULL,
    file_id           INTEGER NOT NULL,       -- index into the report's files
    path              VARCHAR NOT NULL,       -- repository-relative when mapped
    report_path       VARCHAR NOT NULL,       -- as the report named it
    mapping           VARCHAR NOT NULL,       -- 'mapped' | 'ambiguous' | 'unmapped'
    lines_found       BIGINT NOT NULL,
    lines_hit         BIGINT NOT NULL,
    branches_found    BIGINT NOT NULL,
    branches_hit      BIGINT NOT NULL,
    functions_found   BIGINT NOT NULL,
    functions_hit     BIGINT NOT NULL,
    source_sha256     VARCHAR,
    logical_source_id VARCHAR,
    variant           VARCHAR
);

CREATE TABLE lines (
    snap    INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    line    INTEGER NOT NULL,
    hits    BIGINT NOT NULL
);

CREATE TABLE branches (
    snap    INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    line    INTEGER NOT NULL,
    block   INTEGER NOT NULL,
    branch  VARCHAR NOT NULL,
    taken   BIGINT NOT NULL                    -- -1: never evaluated ('-')
);

CREATE TABLE functions (
    snap       INTEGER NOT NULL,
    file_id    INTEGER NOT NULL,
    name       VARCHAR NOT NULL,
    start_line INTEGER NOT NULL,
    end_line   INTEGER NOT NULL,               -- 0: unknown
    hits       BIGINT NOT NULL
);

CREATE TABLE regions (
    snap       INTEGER NOT NULL,
    file_id    INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    start_col  INTEGER NOT NULL,
    end_line   INTEGER NOT NULL,
    end_col    INTEGER NOT NULL,
    hits       BIGINT NOT NULL,
    kind       TINYINT NOT NULL                -- llvm numbering: 0 code .. 4 branch
);

-- Named tests (LCOV TN:, coverage.py contexts) of a snapshot.
CREATE TABLE test_names (
    snap    INTEGER NOT NULL,
    test_id INTEGER NOT NULL,
    name    VARCHAR NOT NULL
);

-- Which named test hit which item: kind 0 line, 1 branch, 2 function.
CREATE TABLE test_observations (
    snap    INTEGER NOT NULL,
    test_id INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    kind    TINYINT NOT NULL,
    line    INTEGER NOT NULL,
    item    INTEGER NOT NULL,
    hits    BIGINT NOT NULL
);
"""

_REVISION_2 = """
-- Duplicate-test groups, computed at ingest: tests whose full ordered lists of
-- {kind, file, line, item} observations are identical share ``dup_group``
-- (the smallest test_id among them). Equality is decided by comparing the
-- whole lists inside DuckDB; a hash only pre-selects candidates.
CREATE TABLE test_signatures (
    snap       INTEGER NOT NULL,
    test_id    INTEGER NOT NULL,
    item_count BIGINT NOT NULL,
    dup_group  INTEGER NOT NULL
);
"""

_REVISION_3 = """
-- Runs of consecutive uncovered executable lines (kind 0), and executed lines
-- with at least one untaken branch (kind 1, one row per line; missed counts
-- the untaken branches). Ranked by line_count for coverage_review insight.
CREATE TABLE uncovered_ranges (
    snap       INTEGER NOT NULL,
    file_id    INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line   INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    kind       TINYINT NOT NULL,
    missed     INTEGER NOT NULL
);

-- Insight targets: a file's uncovered ranges grouped by the function that
-- encloses them (the last function starting at or before the range; NULL:
-- outside any function, or a report without functions).
CREATE TABLE uncovered_targets (
    snap         INTEGER NOT NULL,
    file_id      INTEGER NOT NULL,
    function     VARCHAR,
    uncovered    INTEGER NOT NULL,            -- uncovered executable lines
    partial      INTEGER NOT NULL,            -- executed lines with untaken branches
    region_count INTEGER NOT NULL,
    ranges       INTEGER[][] NOT NULL          -- [start, end, line_count, kind, missed], largest first
);
"""

_REVISION_4 = """
-- The git blob id of the text each file was measured on: the working-tree
-- file's for a report of a dirty tree, else the commit's blob. NULL: unknown
-- (unmapped files, a working-tree file that could not be read, and every
-- file of a snapshot stored before revision 4).
ALTER TABLE files ADD COLUMN content_blob VARCHAR;

-- The measured text itself, zstd-compressed, for files whose measured text is
-- not the commit's (uncommitted edits when the report was imported), so
-- task=source shows what was measured after the edits are gone.
CREATE TABLE file_texts (
    snap    INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    text    BLOB NOT NULL                      -- zstd frame of the file's bytes
);
"""

_REVISION_5 = """
-- Registered test commands: immutable; command_id derives from content_hash,
-- the SHA-256 of the canonical JSON of {argv, cwd, timeout_s, env, artifacts,
-- args_policy}. A change is a new registration.
CREATE TABLE commands (
    command_id    VARCHAR PRIMARY KEY,         -- 'cmd-' + 16 hex of content_hash
    content_hash  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    spec          JSON NOT NULL,               -- the canonical registration
    registered_at TIMESTAMPTZ NOT NULL
);

-- Approvals and rejections, append-only: a command's status is its latest
-- decision ('pending' without one). Who, when and from where (cli, dashboard,
-- attested).
CREATE TABLE command_decisions (
    command_id VARCHAR NOT NULL,
    seq        INTEGER NOT NULL,
    decision   VARCHAR NOT NULL,               -- 'approved' | 'rejected'
    decided_by VARCHAR NOT NULL,
    via        VARCHAR NOT NULL,               -- 'cli' | 'dashboard' | 'attested'
    note       VARCHAR,
    decided_at TIMESTAMPTZ NOT NULL
);

-- Managed runs: mutable only while queued or running, then a terminal record.
CREATE TABLE runs (
    run_id          VARCHAR PRIMARY KEY,       -- 'run-' + 16 hex
    command_id      VARCHAR NOT NULL,
    command_hash    VARCHAR NOT NULL,
    args            JSON NOT NULL,             -- case arguments, appended as argv words
    baseline        JSON,                      -- explicit incremental baseline snapshot ids
    idempotency_key VARCHAR,
    fingerprint     VARCHAR NOT NULL,          -- execution fingerprint (reuse_if_unchanged)
    worktree_path   VARCHAR NOT NULL,
    state           VARCHAR NOT NULL,          -- queued running succeeded failed cancelled timed_out interrupted
    reason          VARCHAR,
    exit_code       INTEGER,
    pgid            INTEGER,                   -- the run's process group while running
    cancel_requested BOOLEAN NOT NULL,
    queued_at       TIMESTAMPTZ NOT NULL,
    started_at      TIMESTAMPTZ,
    ended_at        TIMESTAMPTZ,
    stdout_bytes    BIGINT,
    stderr_bytes    BIGINT,
    stdout_truncated BOOLEAN,
    stderr_truncated BOOLEAN,
    incremental_review JSON
);

-- Every state transition of a run, in order.
CREATE TABLE run_events (
    run_id VARCHAR NOT NULL,
    seq    INTEGER NOT NULL,
    event_at TIMESTAMPTZ NOT NULL,
    state  VARCHAR NOT NULL,
    detail VARCHAR
);

-- The declared artifacts of a finished run: ingested (with the snapshot, the
-- row written in the snapshot's own transaction), skipped_stale or failed.
CREATE TABLE run_artifacts (
    run_id      VARCHAR NOT NULL,
    path        VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,
    snapshot_id VARCHAR,
    error_code  VARCHAR,
    detail      VARCHAR
);
"""

_REVISION_6 = """
-- Immutable composite snapshots: one inventory's production coverage across
-- languages at one checkout revision (coverage_core/composite).
CREATE TABLE composite_snapshots (
    comp              INTEGER PRIMARY KEY,       -- internal key of entry and region rows
    composite_id      VARCHAR NOT NULL UNIQUE,   -- public id, 'comp-' prefixed
    created_at        TIMESTAMPTZ NOT NULL,
    mapping_version   VARCHAR NOT NULL,          -- canonical-region rules (composite/regions.py)
    inventory_sha256  VARCHAR NOT NULL,          -- SHA-256 of the inventory file's bytes
    inventory_path    VARCHAR NOT NULL,
    commit_sha        VARCHAR,                   -- the checkout revision
    dirty             BOOLEAN NOT NULL,          -- tracked files had uncommitted changes
    branch            VARCHAR,
    worktree_id       VARCHAR NOT NULL,
    worktree_path     VARCHAR NOT NULL,
    provenance        VARCHAR NOT NULL,          -- 'import' | 'run'
    registration      JSON,                      -- the command registration of a managed run
    toolchains        JSON NOT NULL,             -- tool -> version
    artifacts         JSON NOT NULL,             -- the evidence reports: hashes, formats, statuses
    status            VARCHAR NOT NULL,          -- 'complete' | 'incomplete'
    denominator_known BOOLEAN NOT NULL,
    totals            JSON NOT NULL,             -- kind -> {found, hit}, plus combined
    components        JSON NOT NULL,             -- per-component summaries
    blocking          JSON NOT NULL,             -- one reason per unmeasured inventory entry
    remediation       JSON NOT NULL              -- {measure: [...], test: [...]}
);

-- One row per inventory entry (component x variant x logical source).
CREATE TABLE composite_entries (
    comp              INTEGER NOT NULL,
    entry_id          INTEGER NOT NULL,
    component         VARCHAR NOT NULL,
    variant           VARCHAR NOT NULL,
    logical_source_id VARCHAR NOT NULL,
    paths             VARCHAR[] NOT NULL,
    identities        VARCHAR[] NOT NULL,        -- git blob of each path's text ('' unknown)
    status            VARCHAR NOT NULL,          -- 'measured' or the blocking reason
    detail            VARCHAR,
    denominator       VARCHAR NOT NULL           -- evidence | carried | zeroed_evidence | unknown
);

-- Canonical regions, deduplicated by (entry, kind, span, item); ``path`` is
-- one path of the entry's logical source.
CREATE TABLE composite_regions (
    comp       INTEGER NOT NULL,
    entry_id   INTEGER NOT NULL,
    path       VARCHAR NOT NULL,
    kind       TINYINT NOT NULL,                 -- 0 code, 1 branch, 2 function
    start_line INTEGER NOT NULL,
    start_col  INTEGER NOT NULL,
    end_line   INTEGER NOT NULL,
    end_col    INTEGER NOT NULL,
    item       INTEGER NOT NULL,
    hits       BIGINT NOT NULL
);
"""

_REVISION_7 = """
-- A compacted snapshot's detail (lines, branches, functions, regions,
-- test_names, test_observations, file_texts) as one zstd frame of NumPy
-- columns (coverage_core.storage.payload). Written in the transaction that
-- deletes those rows: a snapshot has a payload row exactly when it has no
-- relational detail. Totals, files and the precomputed answers stay.
CREATE TABLE snapshot_payloads (
    snap           INTEGER PRIMARY KEY,
    format_version INTEGER NOT NULL,
    row_count      BIGINT NOT NULL,            -- detail rows the payload holds
    detail_bytes   BIGINT NOT NULL,            -- the uncompressed columns
    payload_bytes  BIGINT NOT NULL,            -- the zstd frame
    created_at     TIMESTAMPTZ NOT NULL,
    payload        BLOB NOT NULL
);

-- One row per finished compaction pass (manual or the daemon's worker).
CREATE TABLE compaction_passes (
    finished_at    TIMESTAMPTZ NOT NULL,
    trigger        VARCHAR NOT NULL,           -- 'manual' | 'worker'
    compacted      INTEGER NOT NULL,
    detail_bytes   BIGINT NOT NULL,
    payload_bytes  BIGINT NOT NULL,
    skipped        INTEGER NOT NULL            -- eligible but left for a later pass (batch size)
);
"""

_REVISION_8 = """
-- A run's composite artifact (a registered command's composite inventory):
-- kind 'composite', the composite it built and each report's status.
ALTER TABLE run_artifacts ADD COLUMN kind VARCHAR DEFAULT 'report';   -- 'report' | 'composite'
ALTER TABLE run_artifacts ADD COLUMN composite_snapshot_id VARCHAR;
ALTER TABLE run_artifacts ADD COLUMN reports JSON;                    -- [{component, variant, path, status, detail}]
"""

_REVISION_9 = """
-- What an approval binds beside the registration: the executable argv[0]
-- resolved to through the run's PATH, {path, real_path, sha256}. A run starts
-- only while argv[0] still resolves to it; NULL on a rejection (and on an
-- approval made before revision 9, which must be made again).
ALTER TABLE command_decisions ADD COLUMN executable JSON;
"""

_REVISION_10 = """
-- SHA-256 (hex) of the payload's decompressed frame; restore refuses a payload
-- whose content differs (store_damaged naming the snapshot). NULL only when the
-- migration below found a payload it could not decompress: restore refuses it too.
ALTER TABLE snapshot_payloads ADD COLUMN content_sha256 VARCHAR;
-- 'compaction': taken of the bytes the compaction wrote; 'migration': taken
-- when revision 10 was applied, of the bytes found then.
ALTER TABLE snapshot_payloads ADD COLUMN digest_origin VARCHAR;
-- A composite region's hits summed past 2^63-1 were clamped at that maximum
-- (coverage_core.counts): the composite says so instead of a wrapped count.
ALTER TABLE composite_snapshots ADD COLUMN saturated BOOLEAN DEFAULT false;
"""


def _digest_old_payloads(con: duckdb.DuckDBPyConnection) -> None:
    """Revision 10's data step: the digest of every payload compacted before it, marked 'migration'."""
    con.execute(_REVISION_10)
    for snap_key, frame, detail in con.execute(
        "SELECT snap, payload, detail_bytes FROM snapshot_payloads ORDER BY snap"
    ).fetchall():
        try:
            found: str | None = digest(frame, max_bytes=max(_FLOOR, int(detail * _SLACK)))
        except CoverageError:
            found = None  # already unreadable: restore will say so, naming the snapshot
        con.execute(
            "UPDATE snapshot_payloads SET content_sha256 = ?, digest_origin = 'migration' WHERE snap = ?",
            [found, snap_key],
        )


_REVISION_11 = """
-- A file's headline by its producing tool's rule (coverage_core.headline): for
-- coverage.py statements plus branches, for JaCoCo instructions, for Go
-- statements, else lines. Filled for older rows by the step below from the
-- columns they have: lines (plus branches for coverage.py), since JaCoCo's
-- per-file instructions and Go's per-file statements were not kept before.
ALTER TABLE files ADD COLUMN headline_found BIGINT;
ALTER TABLE files ADD COLUMN headline_hit BIGINT;
-- How many lines of the file the tool excluded (0: none, or not reported).
ALTER TABLE files ADD COLUMN excluded INTEGER DEFAULT 0;

-- The lines each file's tool excluded from measurement (coverage.py's
-- excluded_lines: '# pragma: no cover' and the like), in (snap, file_id, line)
-- order. A few rows per file: compaction leaves them in place, like files.
CREATE TABLE excluded_lines (
    snap    INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    line    INTEGER NOT NULL
);
"""

# The formats whose headline adds branches to the lines (coverage.py's, coverage_core.headline).
_COMBINED = "s.format = 'coveragepy' OR (s.format = 'cobertura' AND s.tool = 'coverage.py')"


def _headline_of_old_files(con: duckdb.DuckDBPyConnection) -> None:
    """Revision 11's data step: the headline of every file stored before it, from the columns it has."""
    con.execute(_REVISION_11)
    con.execute(
        f"""UPDATE files SET
              headline_found = files.lines_found + CASE WHEN {_COMBINED} THEN files.branches_found ELSE 0 END,
              headline_hit = files.lines_hit + CASE WHEN {_COMBINED} THEN files.branches_hit ELSE 0 END
            FROM snapshots s WHERE s.snap = files.snap"""
    )


def _frames_apart(con: duckdb.DuckDBPyConnection) -> None:
    """Revision 12: every payload's frame moves to its own table (copied inside DuckDB, one at a time), and
    ``snapshot_payloads`` keeps the descriptions."""
    for (snap_key,) in con.execute("SELECT snap FROM snapshot_payloads ORDER BY snap").fetchall():
        table = payload_tables.create(con, snap_key)
        con.execute(f"INSERT INTO {table} SELECT payload FROM snapshot_payloads WHERE snap = ?", [snap_key])
    con.execute("ALTER TABLE snapshot_payloads DROP COLUMN payload")


# Ordered: MIGRATIONS[i] brings a store from revision i to i + 1 (DDL text, or a step that runs it and
# fills what DDL cannot compute).
MIGRATIONS: tuple[str | Callable[[duckdb.DuckDBPyConnection], None], ...] = (
    _REVISION_1,
    _REVISION_2,
    _REVISION_3,
    _REVISION_4,
    _REVISION_5,
    _REVISION_6,
    _REVISION_7,
    _REVISION_8,
    _REVISION_9,
    _digest_old_payloads,
    _headline_of_old_files,
    _frames_apart,
)
assert len(MIGRATIONS) == SCHEMA_REVISION

_META = (
    "CREATE TABLE IF NOT EXISTS schema_revision (revision INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of the main schema, sorted; a read, safe on a read-only connection."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' "
        "ORDER BY table_name"
    ).fetchall()
    return [r[0] for r in rows]


def foreign_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of a store this program did not create; ``[]`` for ours or an empty file."""
    found = tables(con)
    return [] if not found or "schema_revision" in found else found


def current_revision(con: duckdb.DuckDBPyConnection) -> int:
    con.execute(_META)
    row = con.execute("SELECT max(revision) FROM schema_revision").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def migrate(con: duckdb.DuckDBPyConnection, *, target: int = SCHEMA_REVISION, where: str = "store") -> int:
    """Bring the store to ``target``; each step commits with its revision row."""
    revision = current_revision(con)
    if revision > SCHEMA_REVISION:
        raise CoverageError(
            ErrorCode.SCHEMA_TOO_NEW,
            f"{where} has schema revision {revision}; this coverage-mcp knows up to {SCHEMA_REVISION}",
            "Upgrade coverage-mcp (pip install -U coverage-mcp); the store is left untouched.",
            {"store_revision": revision, "supported_revision": SCHEMA_REVISION},
        )
    for step in range(revision, target):
        with transaction(con):
            migration = MIGRATIONS[step]
            if callable(migration):
                migration(con)
            else:
                con.execute(migration)
            con.execute("INSERT INTO schema_revision VALUES (?, now())", [step + 1])
    return max(revision, target)
