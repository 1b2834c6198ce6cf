from __future__ import annotations

import collections
import compileall
import functools
import importlib.util
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from coverage_core.config import Settings
from coverage_core.execution.worker import running_runtimes

from .browser import fresh_context, launched
from .daemons import Running, ServeProcess, StoreHolder, in_process
from .detail_reads import UNDECLARED, install
from .environment import scrub
from .gitrepo import commit, git, make_repo, write
from .realcov import make_package, measure

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"


CHECKOUT = Path(__file__).resolve().parents[1]
# What every child process of the suite imports: compiled once per run, before the first test, so the children
# read .pyc files. A shell exporting PYTHONDONTWRITEBYTECODE (this project's machines and CI do) would otherwise
# have every CLI, daemon and pytest child compile the sources again (measured: 1.0 s of imports without .pyc,
# 0.8 s with). compileall writes whatever that variable says, and skips what is already up to date.
PRECOMPILED = ("coverage_core", "coverage_daemon", "coverage_cli", "tests")
# The run's temporary folder goes on a RAM-backed tmpfs where there is one with room: the suite writes a few
# gigabytes of stores, checkouts and reports, and test_review.py alone spends 4 s less of system CPU there.
MEMORY_TMPFS = Path("/dev/shm")
MEMORY_TMPFS_ROOM = 8 << 30  # free in the tmpfs and in memory: a whole run's folder is about 3.5 GB
# Short: a daemon's Unix socket lives in a test's home under this folder, and a socket path may not exceed
# 107 bytes (/dev/shm/cm-XXXXXXXX/t/ is shorter than pytest's own /tmp/pytest-of-USER/pytest-N/).
MEMORY_BASETEMP_PREFIX = "cm-"


def _memory_room() -> int:
    """Bytes free on ``MEMORY_TMPFS`` and in memory (a tmpfs holds its files in memory), whichever is less;
    0 where it is not a writable tmpfs."""
    try:
        with open("/proc/mounts") as mounts:
            kinds = {fields[1]: fields[2] for fields in (line.split() for line in mounts) if len(fields) > 2}
        if kinds.get(str(MEMORY_TMPFS)) != "tmpfs" or not os.access(MEMORY_TMPFS, os.W_OK | os.X_OK):
            return 0
        stat = os.statvfs(MEMORY_TMPFS)
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return 0
    return min(stat.f_bavail * stat.f_frsize, available)


_memory_basetemp = pytest.StashKey[Path]()


def _package_modules() -> Iterator[Path]:
    """The modules of ``PRECOMPILED``: files of folders that are packages all the way down, so the sample
    project and other sources tests copy into repositories get no ``__pycache__`` to copy with them."""
    for name in PRECOMPILED:
        root = CHECKOUT / name
        for init in sorted(root.rglob("__init__.py")):
            folder = init.parent
            within = [folder, *(p for p in folder.parents if p == root or root in p.parents)]
            if all((part / "__init__.py").exists() for part in within):
                yield from sorted(folder.glob("*.py"))


class RunFolders:
    """The run's sources compiled and its temporary folder chosen, before the tmp_path plugin reads
    ``--basetemp``: a plugin of its own, since this file's ``pytest_configure`` runs after that plugin's
    (it needs the folder made) and a historic hook takes no wrapper."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """In the run's first process (an xdist worker gets its folder from it), unless it only collects:
        ``PRECOMPILED`` compiled and the assertions rewritten ahead (``_rewrite_test_modules``); always,
        the temporary folder on ``MEMORY_TMPFS`` unless ``--basetemp`` names one. That folder is a
        fresh one (``mkdtemp``) holding nothing else, so nothing pytest empties belongs to anyone else;
        ``pytest_unconfigure`` removes it. Elsewhere, or without room, pytest's default folder is used."""
        if hasattr(config, "workerinput"):
            return
        if not config.option.collectonly:  # a collection starts no child and is its own only reader
            for source in _package_modules():
                compileall.compile_file(source, quiet=2)
            _rewrite_test_modules(config)
        late = hasattr(config, "_tmp_path_factory")  # this file was found after the run was configured
        if not late and config.option.basetemp is None and _memory_room() >= MEMORY_TMPFS_ROOM:
            own = Path(tempfile.mkdtemp(prefix=MEMORY_BASETEMP_PREFIX, dir=MEMORY_TMPFS))
            config.stash[_memory_basetemp] = own
            config.option.basetemp = str(own / "t")


def _rewrite_test_modules(config: pytest.Config) -> None:
    """The test modules' assertions rewritten once, into pytest's own cache files beside them, which every
    xdist worker then reads at collection instead of rewriting all of them itself (measured: a collection
    takes 11.5 s of CPU rewriting, 4.2 s reading the cache). So are the modules of the installed pytest
    plugins' packages (pytest rewrites those too: hypothesis, anyio, xdist, ...), which every pytest process
    of the run imports, its workers and the child runs of the measured packages alike (measured: a child
    run of one trivial test takes 1.8 s of CPU rewriting them, 0.7 s reading their cache). pytest writes
    that cache only where PYTHONDONTWRITEBYTECODE is unset, and reads it either way; its rewriting
    functions are not public, so if they change this is skipped and each process rewrites as before."""
    if config.getoption("assertmode") != "rewrite":
        return
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        sources = [*(CHECKOUT / "tests").glob("test_*.py"), CHECKOUT / "tests" / "conftest.py"]
        sources += _plugin_sources(state.hook._must_rewrite)
        for source in sorted(sources):
            pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc, state.trace) is None and rewrite.try_makedirs(pyc.parent):
                try:
                    source_hash, code = rewrite._rewrite_test(source, config)
                except (SyntaxError, ValueError, OSError):
                    continue  # a file its package never imports as Python; pytest would not either
                rewrite._write_pyc(state, code, source_hash, pyc)
    except (ImportError, AttributeError, KeyError, TypeError):
        return


def _plugin_sources(names: Iterable[str]) -> list[Path]:
    """The ``.py`` files of the modules and packages pytest marked for rewriting (its plugins')."""
    found: list[Path] = []
    for name in sorted(names):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is None or origin.suffix != ".py":
            continue
        found += sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
    return found


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.register(RunFolders(), "coverage-mcp-run-folders")


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin has made this run's temporary folder
def pytest_configure(config: pytest.Config) -> None:
    """The run's environment is the suite's before any test or subprocess starts (``environment.scrub``)."""
    scrub(config._tmp_path_factory.getbasetemp() / "environment")
    install()  # every query through Call names the detail it reads (detail_reads)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's own folder on ``MEMORY_TMPFS`` is removed (it holds memory, not disk)."""
    own = config.stash.get(_memory_basetemp, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


# The files that take longest, longest first (measured: benchmarks/suite_durations.md, the quiet run of the
# evening of 2026-12-01: every file over 24 s of test time). xdist hands out whole
# files (--dist loadfile) in collection order (scripts/test passes --no-loadscope-reorder), so these start
# first and no worker begins a long file while the others are finishing; every other file follows, those
# with more tests first. The order changes what runs when, never what runs.
LONGEST_FIRST = (
    "tests/test_real_package_sides.py",
    "tests/test_compaction.py",
    "tests/test_trust_fuzz.py",
    "tests/test_review.py",
    "tests/test_hermetic.py",
    "tests/test_faults.py",
    "tests/test_dashboard_browser.py",
    "tests/test_cli_conveniences.py",
    "tests/test_runs_daemon.py",
    "tests/test_dashboard_api.py",
    "tests/test_trust_auth.py",
    "tests/test_branch_identity.py",
    "tests/test_store_corpus.py",
    "tests/test_analysis_daemon.py",
    "tests/test_daemon_lifecycle.py",
    "tests/test_remedies.py",
    "tests/test_runs.py",
    "tests/test_compaction_daemon.py",
    "tests/test_fresh_clone.py",
    "tests/test_dashboard_review_browser.py",
    "tests/test_connector_lifecycle.py",
    "tests/test_no_hidden_cuts.py",
    "tests/test_connector_protocol.py",
    "tests/test_cli_routing.py",
    "tests/test_corpus_totals.py",
    "tests/test_cli_wait.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first (``LONGEST_FIRST``), then the rest by their number of tests; a file's own tests
    keep their order (the sort is stable)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    counts = collections.Counter(item.nodeid.split("::")[0] for item in items)

    def file_order(item: pytest.Item) -> tuple[int, int]:
        name = item.nodeid.split("::")[0]
        return (rank.get(name, len(rank)), -counts[name])

    items.sort(key=file_order)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never touch the user's home or port: every test gets its own COVERAGE_MCP_HOME, and port 0, so a
    daemon a test starts binds an ephemeral port and its commands find it through the home's lease. The
    default port may be held by anyone's daemon on this machine (a command would meet daemon_conflict)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("COVERAGE_MCP_HOME", str(home))
    monkeypatch.setenv("COVERAGE_MCP_PORT", "0")
    return home


@pytest.fixture(autouse=True)
def detail_declared() -> Iterator[None]:
    """No query of the test read detail without declaring it, even where the answer swallowed the failure."""
    UNDECLARED.clear()
    yield
    assert not UNDECLARED, f"queries read detail without declaring it: {UNDECLARED}"


@pytest.fixture(autouse=True)
def runtimes_torn_down() -> Iterator[None]:
    """A run runtime a test started (an in-process CLI command, a daemon) stops with the test, not with the
    process: its threads would otherwise go on executing runs into the next test."""
    before = set(running_runtimes())
    yield
    for runtime in set(running_runtimes()) - before:
        runtime.stop()


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session folder where compressed corpus files are decompressed once."""
    return tmp_path_factory.mktemp("corpus")


def make_sample_repo(repo: Path) -> Path:
    """The bundled sample project as a git repository at ``repo``, with real coverage.py reports inside it
    (untracked)."""
    shutil.copytree(SAMPLE / "project", repo)
    make_repo(repo, {})
    for name in ("step3.coverage.lcov", "step3.coverage.json", "step1.coverage.json"):
        shutil.copy(SAMPLE / "reports" / name, repo / name)
    return repo


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """The bundled sample project as a git repository, with real coverage.py reports inside it (untracked)."""
    return make_sample_repo(tmp_path / "inventory")


# -- daemons ------------------------------------------------------------------------------


@pytest.fixture
async def daemon(isolated_home: Path) -> AsyncIterator[Running]:
    """A real daemon in this test's event loop, on an ephemeral loopback port, with its lock taken."""
    async with in_process(Settings.from_env(port=0)) as running_daemon:
        yield running_daemon


@pytest.fixture
def serve_process(isolated_home: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(isolated_home)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def shared_serve_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One ``coverage-mcp serve`` for the tests of a module that only read from it (its lock, its health,
    its refusals) or each register a project of their own in it: a daemon's start is about a second of CPU.
    Its home is its own, not the test's ``isolated_home``; a test that stops it, rotates its token or changes
    what every project sees takes ``serve_process`` instead."""
    proc = ServeProcess(tmp_path_factory.mktemp("home"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def store_holder(sample_repo: Path) -> Iterator[StoreHolder]:
    holder = StoreHolder(sample_repo)
    try:
        yield holder
    finally:
        holder.close()


# -- a measured history -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def shop_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[Path, str]]]:
    """The realcov package measured twice: c0 by two of its tests, c1 (one more file) by all of them; their
    JSON reports and commits. Built once per worker; tests copy the checkout (realcov.copy_checkout)."""
    root = tmp_path_factory.mktemp("dashboard")
    repo = make_package(root / "repo")
    reports: dict[str, tuple[Path, str]] = {}
    out = measure(
        repo, "tests/test_cart.py::test_total_sums_prices", "tests/test_cart.py::test_standard_shipping"
    )
    reports["c0"] = (Path(shutil.copy(out["json"], root / "c0.json")), git(repo, "rev-parse", "HEAD"))
    write(repo, {"shop/extra.py": "def twice(x):\n    if x:\n        return 2 * x\n    return 0\n"})
    commit(repo, "extra")
    out = measure(repo)
    reports["c1"] = (Path(shutil.copy(out["json"], root / "c1.json")), git(repo, "rev-parse", "HEAD"))
    return repo, reports


class StoredCheckout:
    """A checkout with reports stored once for a module, and a pristine copy of it and its store."""

    def __init__(self, checkout: Path, pristine: Path) -> None:
        self.checkout, self.pristine = checkout, pristine

    def fresh(self) -> Path:
        """The pristine checkout and store put back where they were stored (the store names its worktree by
        path): each test starts from the same snapshots, with nothing the last test wrote."""
        shutil.rmtree(self.checkout)
        shutil.copytree(self.pristine, self.checkout, symlinks=True)
        return self.checkout


@pytest.fixture(scope="module")
def shop_stored(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]], tmp_path_factory: pytest.TempPathFactory
) -> StoredCheckout:
    """``shop_history``'s checkout with c0 and c1 stored, once for the module (in a home of its own: the
    tests' homes come later); a test takes ``shop_stored.fresh()``."""
    from .browser import store

    base = tmp_path_factory.mktemp("shop-stored")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COVERAGE_MCP_HOME", str(base / "home"))
        env.setenv("COVERAGE_MCP_PORT", "0")
        checkout = Path(shutil.copytree(shop_history[0], base / "repo"))
        store(checkout, shop_history[1], "c0", "c1")
    return StoredCheckout(checkout, Path(shutil.copytree(checkout, base / "pristine", symlinks=True)))


# -- Chromium ------------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_chromium() -> AsyncIterator[Any]:
    """One headless Chromium for a browser-test file. Playwright answers only on the event loop that started
    it, so a file that uses it runs its tests and async fixtures in one loop of its own
    (``pytestmark = pytest.mark.asyncio(loop_scope="module")``, fixtures with ``loop_scope="module"``)."""
    async with launched() as browser:
        yield browser


@pytest.fixture
def chromium(shared_chromium: Any) -> Callable[..., Any]:
    """``async with chromium(**context_options) as context``: a fresh context of the file's Chromium (its
    own cookies, storage and cache), closed after."""
    return functools.partial(fresh_context, shared_chromium)
