"""A full disk (a real file-size limit on the agent process) gives a clear error and keeps the last
good state; after space is freed, the run resumes."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path

from support.cli import REPO_ROOT, agent_environment, journal_records, run_agent, write_script

LIMIT_BYTES = 48_000


def _limit_file_size() -> None:
    """Runs in the child before exec: files it writes may not grow past LIMIT_BYTES (EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get the error instead of being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))


def test_a_full_disk_is_a_clear_error_and_the_last_good_state_survives(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    bulky = [
        {"tool": "update_state", "arguments": {"findings": [{"summary": f"finding {number}: " + "x" * 4000}]}}
        for number in range(30)
    ]
    script = write_script(tmp_path / "bulky.json", [*bulky, {"finish": "stored everything"}])
    arguments = [
        sys.executable,
        "-m",
        "agent",
        "run",
        "-g",
        "fill the disk",
        "--script",
        str(script),
        "--state-dir",
        str(state_dir),
    ]
    full = subprocess.run(
        arguments,
        capture_output=True,
        text=True,
        env=agent_environment(),
        cwd=REPO_ROOT,
        preexec_fn=_limit_file_size,
        timeout=120,
        check=False,
    )

    assert full.returncode == 1, full.stderr
    assert "File too large" in full.stderr and "Traceback" not in full.stderr
    assert "agent resume" in full.stderr
    last_good = json.loads((state_dir / "latest.json").read_text())  # whole and valid
    kept = [finding["summary"] for finding in last_good["findings"]]
    assert kept and len(kept) < 30
    assert not list(state_dir.glob(".*.tmp"))

    resumed = run_agent("resume", state_dir)  # space is back: nothing lost, nothing twice
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads((state_dir / "latest.json").read_text())
    summaries = [finding["summary"] for finding in final["findings"] if finding["summary"].startswith("finding")]
    numbers = [int(summary.split(":")[0].split()[1]) for summary in summaries]
    assert numbers == sorted(set(numbers)), "no finding was recorded twice"
    assert final["status"] == "done"
    intents = [entry["call_id"] for entry in journal_records(state_dir) if entry["kind"] == "intent"]
    assert len(intents) == len(set(intents))
