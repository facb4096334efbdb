"""Debian's Chromium, headless, driven over the DevTools protocol on a pipe (no extra packages).

With ``--remote-debugging-pipe`` Chromium reads protocol messages from file descriptor 3 and writes
to 4, each a JSON object ended by a NUL byte. The test opens a page, evaluates JavaScript in it and
takes a screenshot of the whole page. A fresh profile directory per browser; nothing is fetched from
the network (the flags turn off Chromium's own background traffic, and the pages are local files).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
    "--remote-debugging-pipe",
]


def _above_four(descriptor: int) -> int:
    """The same pipe end on a descriptor above 4, so that moving it onto 3 or 4 cannot close it."""
    moved = fcntl.fcntl(descriptor, fcntl.F_DUPFD, 10)
    os.close(descriptor)
    return moved


class BrowserError(Exception):
    """Chromium answered a command with an error, or did not answer in time."""


class Chromium:
    def __init__(self, user_data_dir: Path, log: Path) -> None:
        assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        to_browser_read, from_browser_write = _above_four(to_browser_read), _above_four(from_browser_write)
        # The shell puts the two pipe ends on descriptors 3 and 4, where Chromium expects them.
        script = (
            f'exec "$0" "$@" 3<&{to_browser_read} 4>&{from_browser_write} {to_browser_read}<&- {from_browser_write}>&-'
        )
        with log.open("ab") as output:
            self.process = subprocess.Popen(
                ["bash", "-c", script, CHROMIUM, *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
                pass_fds=(to_browser_read, from_browser_write),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._from_browser], [], [], remaining)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium closed the pipe (exit code {self.process.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def command(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Send one command (to the page once one is open) and return its result; events are skipped."""
        sent = self._send(method, params, self._session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") != sent:
                continue
            if "error" in message:
                raise BrowserError(f"{method}: {message['error']}")
            result: dict[str, Any] = message.get("result", {})
            return result

    def open(self, url: str, timeout: float = 60.0) -> None:
        """Attach to the page, load ``url`` and wait until the document and its images are loaded."""
        targets = self.command("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        self._session = self.command("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})[
            "sessionId"
        ]
        self.command("Page.enable")
        self.command("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while self.evaluate("document.readyState") != "complete" or self.evaluate("location.href") != url:
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not finish loading")
            time.sleep(0.1)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.command(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the window), written to ``path``."""
        size = self.command("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = base64.b64decode(
            self.command("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})[
                "data"
            ]
        )
        path.write_bytes(data)
        return data

    def close(self) -> None:
        """End the browser this test started."""
        try:
            self._session = None
            self._send("Browser.close")
            self.process.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=20)
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
