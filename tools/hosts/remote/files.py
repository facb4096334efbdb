"""The helper's file operations: logs read from the end (never copied whole) and confined edits, using the same
readers (:mod:`tools.logs.reader`, :mod:`tools.logs.window`) and write guard (:mod:`tools.patch.write_guard`)
as the agent's own machine. File contents travel base64-encoded."""

from __future__ import annotations

import base64
import dataclasses
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.hosts.remote.errors import OperationError
from tools.logs.reader import last_frame, read_last_lines, read_since, substring_filter
from tools.logs.window import read_window
from tools.patch.write_guard import WriteRefused, confine, read_bytes, write_bytes_atomic


def _path(args: dict[str, Any]) -> Path:
    return Path(os.path.expanduser(str(args["path"])))


def _existing(args: dict[str, Any]) -> Path:
    path = _path(args)
    if not path.is_file():
        raise OperationError("not_found", f"no file {path}")
    return path


def file_facts(state: object, args: dict[str, Any]) -> dict[str, Any] | None:
    try:
        info = os.stat(_path(args))
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return {"size": info.st_size, "age_seconds": max(time.time() - info.st_mtime, 0.0)}


def last_lines(state: object, args: dict[str, Any]) -> dict[str, Any]:
    wanted = args.get("filter")
    if wanted and wanted.get("regex"):  # RE2 is not in the standard library: the agent filters those lines itself
        raise OperationError("failed", "regular-expression filters run on the agent's side, not in the helper")
    keep = substring_filter(str(wanted["pattern"])) if wanted else None
    framed = None if keep is None else (lambda line: keep(last_frame(line)))
    tail = read_last_lines(_existing(args), int(args["max_lines"]), max_bytes=int(args["max_bytes"]), keep=framed)
    return dataclasses.asdict(tail)


def since(state: object, args: dict[str, Any]) -> dict[str, Any]:
    return dataclasses.asdict(read_since(_existing(args), int(args["offset"]), max_bytes=int(args["max_bytes"])))


def window(state: object, args: dict[str, Any]) -> dict[str, Any]:
    read = read_window(_existing(args), head_bytes=int(args["head_bytes"]), tail_bytes=int(args["tail_bytes"]))
    fields = ("lines", "numbers", "offsets", "file_size", "bytes_read", "whole_file", "head_line_count")
    return {name: getattr(read, name) for name in fields}


def confined_read(state: object, args: dict[str, Any]) -> dict[str, Any]:
    try:
        target = confine(str(args["path"]), [Path(os.path.expanduser(root)) for root in args["roots"]])
        data, info = read_bytes(target)
    except WriteRefused as error:
        raise OperationError("write_refused", str(error)) from None
    encoded = base64.b64encode(data).decode()
    return {"path": str(target.path), "data_b64": encoded, "inode": info.st_ino, "device": info.st_dev}


def confined_write(state: object, args: dict[str, Any]) -> None:
    expected = args.get("expected")
    try:
        target = confine(str(args["path"]), [Path(os.path.expanduser(root)) for root in args["roots"]])
        identity = None if expected is None else (int(expected[0]), int(expected[1]))
        write_bytes_atomic(target, base64.b64decode(args["data_b64"]), expected=identity)
    except WriteRefused as error:
        raise OperationError("write_refused", str(error)) from None


def real_path(state: object, args: dict[str, Any]) -> str:
    return os.path.realpath(_path(args))


OPERATIONS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "file_facts": file_facts,
    "last_lines": last_lines,
    "since": since,
    "window": window,
    "confined_read": confined_read,
    "confined_write": confined_write,
    "real_path": real_path,
}
READING = {"file_facts", "last_lines", "since", "window", "confined_read", "real_path"}
