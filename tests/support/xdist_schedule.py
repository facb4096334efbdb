"""How the test suite is shared out among pytest-xdist's workers: which tests must run on the same one.

Each worker is a session of its own, so a fixture of wider scope than a test is built once on every worker that
runs a test using it. Tests run one by one wherever a worker is free, except:

- a directory below ``tests/`` whose ``conftest.py`` has session fixtures (``tests/real_engine``: one real vLLM
  for all its tests) runs whole on one worker, so that those fixtures are built once;
- a file that defines a module- or class-scoped fixture (a cluster of sshd servers, a bring-up through MCP), or
  says ``xdist_group``, runs whole on one worker.

Groups are read from the test files' text, in the controller, which does not import them. (xdist's own
``--dist loadgroup`` reads the ``xdist_group`` mark, but cannot with pytest 9.2, whose node ids it no longer
changes.) Work goes out in collection order, so ``tests/real_engine``, collected first and the longest, starts
first.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

WIDE_FIXTURE = re.compile(r"""scope\s*=\s*["'](?:class|module|package|session)["']|xdist_group""")
SESSION_FIXTURE = re.compile(r"""scope\s*=\s*["']session["']""")


@functools.cache
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def group_of(nodeid: str, root: Path) -> str:
    """The unit of work ``nodeid`` belongs to: a directory, a file, or the test alone."""
    file = nodeid.split("::", 1)[0]
    tests = root / "tests"
    for directory in (root / file).parents:
        if directory == tests or tests not in directory.parents:
            break
        if SESSION_FIXTURE.search(_text(directory / "conftest.py")):
            return str(directory.relative_to(root))
    return file if WIDE_FIXTURE.search(_text(root / file)) else nodeid


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with the units of :func:`group_of`."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        self.root = config.rootpath

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid, self.root)


class SchedulePlugin:
    """Registered by ``tests/conftest.py`` where xdist is installed."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> GroupScheduling | None:
        """Ours for ``--dist load`` (what ``-n`` alone means) and ``loadgroup``; any other mode is xdist's."""
        return GroupScheduling(config, log) if config.getvalue("dist") in ("load", "loadgroup") else None
