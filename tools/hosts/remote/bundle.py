"""The helper as one zip file (a Python zip application), built from this package's own modules.

The zip holds exactly the standard-library-only modules the helper needs, with their package paths, and a
``__main__`` that starts it. Its name carries a digest of its contents, so a host keeps one copy per helper
version and a changed helper is installed beside the old one, never over a running one.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[3]
MODULES = (
    "tools/__init__.py",
    "tools/hosts/__init__.py",
    "tools/hosts/command.py",
    "tools/hosts/procfs.py",
    "tools/hosts/supervise.py",
    "tools/hosts/remote/__init__.py",
    "tools/hosts/remote/__main__.py",
    "tools/hosts/remote/errors.py",
    "tools/hosts/remote/files.py",
    "tools/hosts/remote/network.py",
    "tools/hosts/remote/operations.py",
    "tools/hosts/remote/server.py",
    "tools/logs/__init__.py",
    "tools/logs/reader.py",
    "tools/logs/window.py",
    "tools/patch/__init__.py",
    "tools/patch/write_guard.py",
)
MAIN = b"import sys\nfrom tools.hosts.remote.__main__ import main\nsys.exit(main())\n"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # the same sources give the same bytes, and the same name


@dataclass(frozen=True)
class Bundle:
    data: bytes
    digest: str  # first 16 hex digits of the SHA-256 of the zip

    @property
    def file_name(self) -> str:
        return f"helper-{self.digest}.pyz"


@cache
def build() -> Bundle:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in [("__main__.py", MAIN), *((path, (PACKAGE_ROOT / path).read_bytes()) for path in MODULES)]:
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    data = buffer.getvalue()
    return Bundle(data=data, digest=hashlib.sha256(data).hexdigest()[:16])
