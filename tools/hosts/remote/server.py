"""The helper's request loop: JSON lines in on stdin, JSON lines out on stdout, one thread per request.

The first line written is ``{"hello": {...}}`` (interpreter, home, host name, clock). Each request is
``{"id": N, "op": NAME, "args": {...}}`` and gets exactly one answer ``{"id": N, "ok": true, "result": ...}`` or
``{"id": N, "ok": false, "error": {"kind": ..., "message": ...}}``; answers may come in any order. When stdin
closes (the agent went away or the connection dropped) the helper kills the process groups of commands it is
still running for a caller that will never read their output, and exits. Processes it started with ``spawn``
are detached and outlive it.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from typing import Any

from tools.hosts.remote import operations
from tools.hosts.remote.errors import OperationError


class _Writer:
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self.lock:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


def _answer(writer: _Writer, state: operations.HelperState, request: dict[str, Any]) -> None:
    number = request.get("id")
    try:
        handler = operations.OPERATIONS[str(request.get("op"))]
        result = handler(state, request.get("args") or {})
        writer.send({"id": number, "ok": True, "result": result})
    except OperationError as error:
        writer.send({"id": number, "ok": False, "error": {"kind": error.kind, "message": str(error)}})
    except KeyError:
        writer.send({"id": number, "ok": False, "error": {"kind": "unknown_op", "message": str(request.get("op"))}})
    except Exception as error:  # reported to the caller, never lost
        detail = traceback.format_exc(limit=3)
        message = f"{type(error).__name__}: {error}\n{detail}"
        writer.send({"id": number, "ok": False, "error": {"kind": "failed", "message": message}})


def serve(helper_path: str) -> int:
    """Answer requests until stdin closes; ``helper_path`` is this zip (the supervisor runs from it)."""
    state = operations.HelperState(helper_path)
    writer = _Writer()
    writer.send({"hello": operations.hello(state, {})})
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            writer.send({"id": None, "ok": False, "error": {"kind": "bad_request", "message": line[:200].decode()}})
            continue
        threading.Thread(target=_answer, args=(writer, state, request), daemon=True).start()
    state.kill_running_commands()
    return 0
