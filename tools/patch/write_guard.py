"""Confined file writes: a path is writable only inside an allowed root, never through a symlink.

Checking a path and then writing it is racy: a directory or the file itself could be replaced by a
symbolic link in between. So after the check, every access walks down from the root one component
at a time with ``O_NOFOLLOW`` (``openat`` style, via ``dir_fd``), and the final write is an atomic
rename inside the already-opened parent directory. A link swapped in after the check makes the open
fail instead of redirecting the write.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path


class WriteRefused(Exception):
    """The path is outside the allowed roots, goes through a symlink, or is not a regular file."""


@dataclass(frozen=True)
class ConfinedPath:
    """A checked target: ``root`` (resolved) and the components below it."""

    root: Path
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)


def confine(raw_path: str, roots: Sequence[Path]) -> ConfinedPath:
    """Check that ``raw_path`` names a file inside one of ``roots``.

    Relative paths are taken relative to the first root (the working directory). Refused: no roots
    configured, any ``..`` component, a final component that is a symbolic link, and any path whose
    real location (links in parent directories resolved) lies outside every root.
    """
    if not roots:
        raise WriteRefused("no writable roots are configured; writes are disabled")
    if not raw_path.strip():
        raise WriteRefused("empty path")
    given = Path(raw_path).expanduser()
    if ".." in given.parts:
        raise WriteRefused(f"refused {raw_path!r}: paths containing '..' are not allowed; give the full path")
    candidate = given if given.is_absolute() else roots[0] / given
    if candidate.is_symlink():
        try:
            link = f" (to {os.readlink(candidate)!r})"
        except OSError:  # replaced again since the check above: still refused, without the link's target
            link = ""
        raise WriteRefused(
            f"refused {raw_path!r}: it is a symbolic link{link}; patch the file it points to by its own path"
        )
    try:
        real = Path(os.path.realpath(candidate))
    except OSError as error:  # a component was replaced while it was being resolved
        raise WriteRefused(f"refused {raw_path!r}: it changed while it was checked ({error.strerror})") from None
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real == real_root or real_root in real.parents:
            return ConfinedPath(root=real_root, parts=real.relative_to(real_root).parts)
    allowed = ", ".join(str(root) for root in roots)
    escape = " (through a symbolic link)" if real != Path(os.path.abspath(candidate)) else ""
    raise WriteRefused(
        f"refused {raw_path!r}: it resolves to {real}{escape}, outside the writable roots "
        f"({allowed}); add a root in the configuration if this edit is intended"
    )


@contextmanager
def _open_parent(target: ConfinedPath) -> Iterator[int]:
    """Open the parent directory of ``target`` by walking from its root without following links."""
    if not target.parts:
        raise WriteRefused(f"{target.path} is a writable root, not a file")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(target.root, flags)
    try:
        for part in target.parts[:-1]:
            try:
                child = os.open(part, flags, dir_fd=descriptor)
            except OSError as error:
                raise WriteRefused(
                    f"refused {target.path}: directory component {part!r} cannot be opened "
                    f"without following a link ({error.strerror})"
                ) from error
            os.close(descriptor)
            descriptor = child
        yield descriptor
    finally:
        os.close(descriptor)


def read_bytes(target: ConfinedPath) -> tuple[bytes, os.stat_result]:
    """Read a regular file without following links; returns its bytes and stat."""
    with _open_parent(target) as parent:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused as not a regular file).
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            descriptor = os.open(target.parts[-1], flags, dir_fd=parent)
        except FileNotFoundError:
            raise WriteRefused(f"{target.path} does not exist") from None
        except OSError as error:
            raise WriteRefused(
                f"refused {target.path}: cannot open it without following a link ({error.strerror})"
            ) from error
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise WriteRefused(f"refused {target.path}: not a regular file")
            chunks = []
            while chunk := os.read(descriptor, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks), info
        finally:
            os.close(descriptor)


def write_bytes_atomic(target: ConfinedPath, data: bytes, expected: tuple[int, int] | None = None) -> None:
    """Replace the file with ``data`` atomically (temp file + rename in the opened parent directory).

    When ``expected`` (inode, device) is given, the file must still be the one that was read; a file
    swapped in the meantime (for a link or another file) aborts the write. The mode is kept.
    """
    name = target.parts[-1]
    with _open_parent(target) as parent:
        try:
            current = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is not None and not stat.S_ISREG(current.st_mode):
            raise WriteRefused(f"refused {target.path}: it is no longer a regular file (replaced by a link?)")
        if expected is not None and (current is None or (current.st_ino, current.st_dev) != expected):
            raise WriteRefused(f"refused {target.path}: the file was replaced while it was being patched")
        mode = stat.S_IMODE(current.st_mode) if current is not None else 0o644
        temporary = f".{name}.opsloop-{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(temporary, flags, mode, dir_fd=parent)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(descriptor, view)
                    view = view[written:]
                os.fchmod(descriptor, mode)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=parent)
            raise
        os.fsync(parent)
