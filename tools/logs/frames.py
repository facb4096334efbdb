"""Stack frame lines of the tracebacks and stack dumps engines print: Python's ``File "...", line N, in f``
(also wrapped onto two lines by a paste, or in IPython's ``File path.py:N, in f(...)``), py-spy's
``f (path.py:N)``, c10's native ``frame #N: ...``, glibc's, UCX's and gdb's backtraces."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PY_FRAME = re.compile(r'^\s*File ["“](?P<path>[^"”]+)["”], line (?P<line>\d+),? in (?P<function>[\w<>.]+)')
# A frame whose "line N, in function" part was wrapped onto a later line when the log was pasted.
_WRAPPED_FRAME = re.compile(r'^\s*File ["“](?P<path>[^"”]+\.py)["”],?\s*$')
# IPython's and Jupyter's traceback: "File ~/lib/python3.12/site-packages/vllm/.../gemma3.py:452, in Model.load(...)"
_IPYTHON_FRAME = re.compile(r"^\s*File (?P<path>[^\s\"]+\.py):(?P<line>\d+), in (?P<function>[\w<>.]+)")
_SPY_FRAME = re.compile(r"^\s+(?P<function>[\w<>.]+) \((?P<path>[^()\s]+\.py):(?P<line>\d+)\)\s*$")
_NATIVE_FRAME = re.compile(r"^frame #\d+: (?P<function>.+?) \+ 0x[0-9a-f]+ \(0x[0-9a-f]+ in (?P<path>[^)]+)\)")
# glibc's backtrace ("[ 4] /usr/lib/libnccl.so.2(+0xbd72c)[0x7d1d...]", Open MPI numbers them) and UCX's or
# gdb's ("24 0x0000000000081f9a ncclTopoCompute()  /src/graph/search.cc:992").
# gdb's "bt" ("#3  0x00007f32 in ncclProxyGetPostedOps (added=..., proxyState=0x56) at proxy.cc:713", an inlined
# frame without the address, a library's frame "from /lib/libc.so.6").
_GDB_FRAME = re.compile(
    r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?P<function>[\w:~<>.]+) \(.*?\)"
    r"(?: (?:at|from) (?P<path>\S+?)(?::(?P<line>\d+))?)?\s*$"
)
_BACKTRACE_FRAME = re.compile(
    r"^(?:\[\s*\d+\]\s+)?(?P<path>/[^\s(]+)\((?P<function>[\w.]*)(?:\+0x[0-9a-f]+)?\)\s*\[0x[0-9a-f]+\]"
    r"|^\s*\d+\s+0x[0-9a-f]+ (?P<symbol>[\w:~<>.]+)\(\)\s+(?P<source>\S+?):(?P<number>\d+)\s*$"
)


@dataclass
class Frame:
    path: str
    line: int | None
    function: str
    index: int = -1  # line of the frame in the window


def parse_frame(text: str) -> tuple[Frame | None, bool]:
    """A stack frame on this line and whether its listing runs innermost first."""
    match = _PY_FRAME.match(text)
    if match is not None:
        return Frame(match.group("path"), int(match.group("line")), match.group("function")), False
    match = _IPYTHON_FRAME.match(text)
    if match is not None:
        return Frame(match.group("path"), int(match.group("line")), match.group("function")), False
    match = _WRAPPED_FRAME.match(text)
    if match is not None:
        return Frame(match.group("path"), None, "?"), False
    match = _BACKTRACE_FRAME.match(text)
    if match is not None:
        if match.group("symbol"):
            return Frame(match.group("source"), int(match.group("number")), match.group("symbol")), True
        return Frame(match.group("path"), None, match.group("function") or "?"), True
    match = _SPY_FRAME.match(text) or _NATIVE_FRAME.match(text) or _GDB_FRAME.match(text)
    if match is not None:
        line = match.groupdict().get("line")
        return Frame(match.group("path") or "?", int(line) if line else None, match.group("function")), True
    return None, False


def is_live_dump_frame(text: str) -> bool:
    """A py-spy frame: it comes from a dump of a live process, never from an exception's traceback."""
    return _SPY_FRAME.match(text) is not None
