"""A process that appends chained journal records in a loop and records every Ctrl-C it gets, as the agent does.

Usage: ``python journal_writer.py JOURNAL RECORDS``. Prints ``ready`` once its first record is written (the
imports are done), then ``end`` after RECORDS step records. The key is fixed (the test reads the chain).
"""

from __future__ import annotations

import sys
from pathlib import Path

from agent.journal import Journal

KEY = b"journal-writer-test-key-32-bytes"


def main() -> None:
    journal = Journal(Path(sys.argv[1]), KEY)
    journal.record("start")
    print("ready", flush=True)
    done = 0
    while done < int(sys.argv[2]):
        try:
            journal.record("step", number=done)
            done += 1
        except KeyboardInterrupt:
            try:
                journal.record("interrupted")
            except KeyboardInterrupt:
                continue
    print("end", flush=True)


if __name__ == "__main__":
    main()
