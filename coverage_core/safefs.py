"""Files we create or write in places someone else may have prepared: never through a link.

A repository can commit ``.coverage-mcp/`` entries that are symbolic links
(to the lock file, the ``.gitignore``, the database, its WAL, or the folder
itself). Following one would make us overwrite or chmod a file outside the
checkout. So every final path component we open is opened with
``O_NOFOLLOW`` and checked with ``fstat`` (or ``lstat`` where DuckDB opens the
path itself), and anything unexpected is refused with ``store_unavailable``
naming the path, before anything is written. Stdlib only.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from .errors import CoverageError, ErrorCode

FILE, DIRECTORY = "file", "directory"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# A lock file that is a FIFO must not hang open(): non-blocking is harmless for regular files.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFREG: "a regular file",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def refusal(path: Path, why: str, reason: str) -> CoverageError:
    """``store_unavailable`` for an entry we will not use; nothing has been written."""
    if reason == "symlink":
        todo = f"Remove the link (`rm {path}`; its target is left untouched), then retry."
    else:
        todo = f"Move it aside (`mv {path} {path}.old`) or fix it, then retry."
    if ".coverage-mcp" in path.parts and reason in ("symlink", "type"):
        todo += " A repository should never commit .coverage-mcp/ entries: list .coverage-mcp/ in .gitignore."
    return CoverageError(
        ErrorCode.STORE_UNAVAILABLE,
        f"{path} {why}; coverage-mcp only uses its own files there and never follows a link",
        f"Nothing was changed. {todo}",
        {"path": str(path), "reason": reason},
    )


def _check(path: Path, st: os.stat_result, kind: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise refusal(path, "is a symbolic link", "symlink")
    wanted = stat.S_ISDIR if kind == DIRECTORY else stat.S_ISREG
    if not wanted(st.st_mode):
        found = _KINDS.get(stat.S_IFMT(st.st_mode), "a special file")
        raise refusal(
            path, f"is {found}, not a {'directory' if kind == DIRECTORY else 'regular file'}", "type"
        )
    if st.st_uid != os.geteuid():
        raise refusal(path, f"is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})", "owner")


def check_entry(path: Path, kind: str = FILE) -> os.stat_result | None:
    """The entry's lstat, or None when absent; refuses a link, another type or another owner."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise refusal(path, f"cannot be examined ({exc.strerror})", "unreadable") from None
    _check(path, st, kind)
    return st


def private_dir(path: Path, entries: dict[str, str] | None = None) -> None:
    """Create ``path`` 0700 (its parent must exist), or verify and tighten an existing one.

    ``entries`` (name: FILE or DIRECTORY) are checked before the folder is
    touched, so a refused folder is left exactly as it was.
    """
    if check_entry(path, DIRECTORY) is not None:
        for name, kind in (entries or {}).items():
            check_entry(path / name, kind)
    else:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # made meanwhile: verified below like any existing folder
        except OSError as exc:
            raise refusal(path, f"cannot be created ({exc.strerror})", "unwritable") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise _open_refusal(path, exc) from None
    try:
        st = os.fstat(fd)
        _check(path, st, DIRECTORY)
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _open_refusal(path: Path, exc: OSError) -> CoverageError:
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return refusal(path, "is a symbolic link", "symlink")
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return refusal(
            path,
            "is a directory, not a regular file"
            if exc.errno == errno.EISDIR
            else "is under something that is not a directory",
            "type",
        )
    return refusal(path, f"cannot be opened ({exc.strerror})", "unreadable")


def open_file(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a final link and yields only our own regular files."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        raise _open_refusal(path, exc) from None
    try:
        _check(path, os.fstat(fd), FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


# The umask this process started with, while ``private_umask`` holds a stricter one: what the
# commands it runs get back (their files are the person's, made as the person's umask says).
_started_umask: int | None = None


def private_umask() -> None:
    """From now on, files this process makes are 0600 and folders 0700, those DuckDB makes too (a store's
    WAL comes and goes with every checkpoint, made with the umask's mode). For the daemon, which owns stores."""
    global _started_umask
    previous = os.umask(0o077)
    if _started_umask is None:
        _started_umask = previous


def user_umask() -> int:
    """The umask a command run for the person gets: the one this process started with."""
    if _started_umask is not None:
        return _started_umask
    current = os.umask(0o022)
    os.umask(current)
    return current


def make_private(path: Path) -> None:
    """chmod 0600 through a no-follow descriptor (``os.chmod`` would follow a link)."""
    fd = open_file(path, os.O_RDONLY)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _temp_beside(path: Path) -> tuple[Path, int]:
    temp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(6)}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as exc:
        raise refusal(temp, f"cannot be created ({exc.strerror})", "unwritable") from None
    return temp, fd


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a fresh O_EXCL temp file renamed over it (a rename replaces a link, never follows it)."""
    temp, fd = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def copy_new(src: Path, dst: Path) -> None:
    """Copy ``src`` to a new file ``dst`` (O_EXCL), durably. Not a hard link: DuckDB truncates its WAL in place."""
    fd_in = open_file(src, os.O_RDONLY)
    try:
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as exc:
        os.close(fd_in)
        raise refusal(dst, f"cannot be created ({exc.strerror})", "unwritable") from None
    with os.fdopen(fd_in, "rb") as fin, os.fdopen(fd_out, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        os.fsync(fout.fileno())
    _sync_dir(dst.parent)


def same_bytes(a: Path, b: Path) -> bool:
    try:
        if os.lstat(a).st_size != os.lstat(b).st_size:
            return False
        with open(open_file(a, os.O_RDONLY), "rb") as fa, open(open_file(b, os.O_RDONLY), "rb") as fb:
            while True:
                x, y = fa.read(1 << 20), fb.read(1 << 20)
                if x != y:
                    return False
                if not x:
                    return True
    except (OSError, CoverageError):
        return False


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the data itself is synced
    finally:
        os.close(fd)
