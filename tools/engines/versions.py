"""Engine release numbers, compared numerically (``0.5.10`` > ``0.5.9``)."""

from __future__ import annotations

import re

Release = tuple[int, int, int]
_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_release(version: str | None) -> Release | None:
    """(major, minor, patch) of a version string such as ``0.5.10.post1`` or ``0.11.0rc2``; None if unknown.

    Development builds numbered 0.0.0 carry no release information and also yield None.
    """
    if not version:
        return None
    match = _RELEASE.match(version)
    if match is None:
        return None
    release = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    return None if release == (0, 0, 0) else release


def at_least(release: Release | None, minimum: Release) -> bool:
    """True when the release is known and >= minimum. Unknown releases count as newest."""
    return release is None or release >= minimum
