"""Files a command writes: checked before any work starts, and never left half written.

``check_output`` refuses, with one line, a path no file can be written at (a folder that
does not exist, a directory, a device, a folder without write permission), so a command
fails at once instead of after its work. ``atomic_output`` gives a writer a place to
write the whole file and moves it into place only when the writer succeeded: a failure
(disk full, an exception, Ctrl-C) leaves neither the file nor a temporary one behind.
On Linux the file is written unnamed (O_TMPFILE) and only linked into the folder at the
end, so even a process killed with SIGKILL leaves nothing; elsewhere it is written to a
hidden ``.NAME.PID.part`` next to the target, removed on any failure Python sees.

Standard library only: the proxy and attach check their ``--record`` path with it
before they import polars or pyarrow.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sfqtui.errors import InputError


def check_output(path: Path | str, option: str = "--output", not_one_of: Iterable[Path | str] = ()) -> Path:
    """``path`` if a file can be written there, else InputError naming ``option`` and why.
    ``not_one_of``: the files the command reads, which it must not replace."""
    path = Path(path)
    where = f"{option} {path}"
    for source in not_one_of:
        if path.exists() and Path(source).exists() and path.samefile(source):
            raise InputError(f"{where}: is also the file being read; write to another file")
    if path.is_dir():
        raise InputError(f"{where}: is a directory; give the file to write, e.g. {path / 'out.parquet'}")
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise InputError(f"{where}: exists and is not a regular file")
    folder = path.resolve().parent
    if not folder.exists():
        raise InputError(f"{where}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"{where}: {folder} is not a folder")
    try:  # the one sure test: a file made there, unnamed or removed at once
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise InputError(f"{where}: cannot write in the folder {folder} ({exc.strerror or exc})") from None
    return path


@contextmanager
def atomic_output(path: Path | str) -> Iterator[str]:
    """A path to write the whole file at; it appears at ``path`` (replacing any file there)
    when the block ends without an exception, and nothing is left when it does not. A
    write the system refuses (a full disk, a quota, a folder gone) becomes InputError
    naming the file: like an output that cannot be written at all, it is the user's to fix.

    The path given may be a ``/proc/self/fd`` link: open it by name (pyarrow and polars
    do), never rename or delete it.
    """
    target = Path(os.path.realpath(path))  # through a symlink: the file it points to is replaced
    try:
        fd = _unnamed_file(target.parent)
        if fd is None:
            yield from _named_part(target)
            return
        try:
            yield f"/proc/self/fd/{fd}"
            _link_into_place(fd, target)
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"{path}: could not be written ({exc.strerror or exc}); no partial file was left") from exc


def _unnamed_file(folder: Path) -> int | None:
    """An unnamed file in ``folder`` (Linux O_TMPFILE; the umask applies), or None where unsupported."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):  # writers open it through /proc
        return None
    try:
        return os.open(folder, flag | os.O_RDWR, 0o666)
    except OSError:  # a file system without O_TMPFILE
        return None


def _link_into_place(fd: int, target: Path) -> None:
    """Give the unnamed file a hidden name beside ``target``, then move it over ``target``
    (a rename replaces atomically; a link cannot)."""
    hidden = _part_name(target)
    proc_fd = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(str(fd), hidden, src_dir_fd=proc_fd, follow_symlinks=True)
    finally:
        os.close(proc_fd)
    try:
        os.replace(hidden, target)
    except BaseException:
        hidden.unlink(missing_ok=True)
        raise


def _named_part(target: Path) -> Iterator[str]:
    part = _part_name(target)
    try:
        yield str(part)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)


def _part_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.part")
