"""Download one published release file per engine release from the package index, without dependencies.

Uses the index's standard JSON listing (the same one pip reads) to pick one file per release: the
source distribution when there is one, else the smallest pure-Python or CPython 3.11 x86-64 wheel.
Nothing is installed and no build backend runs; the archive is checked against the index's sha256 and
kept in a cache directory, so a second run reads from disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCEPT = "application/vnd.pypi.simple.v1+json"
WHEEL_TAGS = ("py3-none-any", "cp311-cp311-manylinux", "cp38-abi3-manylinux")


class FetchFailed(RuntimeError):
    """A release file could not be found on the index or downloaded intact."""


@dataclass(frozen=True)
class ReleaseFile:
    package: str
    version: str
    filename: str
    url: str
    sha256: str
    path: Path


def default_index_url() -> str:
    """``PIP_INDEX_URL`` when set, else pip's own default index."""
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.rstrip("/")
    from pip._internal.models.index import PyPI  # pip's default, so no index host is written here

    return str(PyPI.simple_url).rstrip("/")


def _listing(index_url: str, package: str) -> dict[str, Any]:
    request = urllib.request.Request(f"{index_url}/{package}/", headers={"Accept": ACCEPT})
    with urllib.request.urlopen(request, timeout=120) as response:
        listing: dict[str, Any] = json.load(response)
    return listing


def _file_version(package: str, filename: str) -> str | None:
    stem = re.escape(package.replace("-", "_")) + "|" + re.escape(package)
    match = re.match(rf"^(?:{stem})-([0-9][^-]*?)(?:\.tar\.gz|-.*\.whl)$", filename, re.IGNORECASE)
    return match.group(1) if match else None


def _rank(filename: str) -> tuple[int, str]:
    if filename.endswith(".tar.gz"):
        return 0, filename
    for position, tag in enumerate(WHEEL_TAGS, start=1):
        if (tag in filename and filename.endswith("x86_64.whl")) or (tag == "py3-none-any" and tag in filename):
            return position, filename
    return 99, filename


def choose_file(listing: dict[str, Any], package: str, version: str) -> dict[str, Any]:
    candidates = [
        item
        for item in listing.get("files", [])
        if _file_version(package, item["filename"]) == version and not item.get("yanked")
    ]
    ranked = sorted((_rank(item["filename"]), item) for item in candidates)
    usable = [item for rank, item in ranked if rank[0] < 99]
    if not usable:
        raise FetchFailed(f"{package} {version}: no source distribution or usable wheel on the index")
    chosen: dict[str, Any] = usable[0]
    return chosen


def fetch_release(package: str, version: str, cache_dir: Path, index_url: str) -> ReleaseFile:
    """The release's archive in ``cache_dir`` (downloaded once, sha256-checked)."""
    item = choose_file(_listing(index_url, package), package, version)
    digest = str(item.get("hashes", {}).get("sha256", ""))
    target = cache_dir / package / item["filename"]
    if not (target.exists() and _sha256(target) == digest):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        with urllib.request.urlopen(item["url"], timeout=600) as response, partial.open("wb") as handle:
            while chunk := response.read(1 << 20):
                handle.write(chunk)
        if digest and _sha256(partial) != digest:
            partial.unlink()
            raise FetchFailed(f"{item['filename']}: sha256 does not match the index")
        os.replace(partial, target)
    return ReleaseFile(package, version, item["filename"], item["url"], digest, target)


def _sha256(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()
