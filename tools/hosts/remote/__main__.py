"""Entry point of the shipped helper zip: ``python helper.pyz serve`` or ``python helper.pyz supervise ...``."""

from __future__ import annotations

import sys

from tools.hosts import supervise
from tools.hosts.remote import server


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "supervise":
        return supervise.main(sys.argv[2:])
    if len(sys.argv) == 2 and sys.argv[1] == "serve":
        return server.serve(sys.argv[0])
    sys.stderr.write("usage: helper.pyz serve | helper.pyz supervise --exit-dir DIR [--cwd DIR] -- ARGV...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
