"""Engine release numbers, compared numerically (``0.5.10`` > ``0.5.9``), and what kind of version it is."""

from __future__ import annotations

import re

Release = tuple[int, int, int]
_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")
_DEVELOPMENT = re.compile(r"(?:\.|-|\+)?dev\d*|\+g[0-9a-f]{6,}|^0\.0\.0", re.IGNORECASE)


def parse_release(version: str | None) -> Release | None:
    """(major, minor, patch) of a published release such as ``0.5.10.post1``, ``0.11.0rc2`` or ``0.32.0+cpu``.

    None for anything that is not a published release: no version, an unparseable one, or a development
    build (``0.0.0.dev0``, ``0.5.21.dev12+g1a2b3c4``), whose flags may differ from every release.
    """
    if not version or is_development(version):
        return None
    match = _RELEASE.match(version)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def is_development(version: str) -> bool:
    return _DEVELOPMENT.search(version) is not None


def describe_version(engine: str, version: str | None) -> str:
    """How a version string will be treated, for messages (``0.0.0.dev0 (a development build)``)."""
    if not version:
        return "of unknown version"
    if is_development(version):
        return f"{version} (a development build)"
    if parse_release(version) is None:
        return f"{version} (not a release number)"
    return version
