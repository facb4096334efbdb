"""Start the loopback OpenAI-compatible server of known timing (fakes/openai_server.py) as a real process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "fakes" / "openai_server.py"


@contextmanager
def fake_server(*options: str) -> Iterator[str]:
    """Yield the base URL of a fresh fake server started with ``options``; stop it afterwards."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER), *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            process.kill()
            raise RuntimeError(f"fake server did not start: {line!r} {process.communicate()[1]}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        process.kill()
        process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
