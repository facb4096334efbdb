"""Run a drafter plan's stages one after another, as one detached, managed process.

Usage: ``python runner.py PLAN.json``. Standard library only, and run by file path, so it
works with any interpreter. Each stage's command inherits this process's stdout and stderr (the
managed log) and its process group (so stopping the run stops the stage too). Progress goes to the
plan's status file, rewritten atomically after every change::

    {"state": "running|done|failed", "stage": "...",
     "stages": {"train": {"state": ..., "exit_code": ..., "cpu_seconds": ...}}}

While a stage runs, its ``cpu_seconds`` (all processes of this run's process group) is refreshed every
few seconds: work that shows nowhere else (a quiet data regeneration) still shows as progress, and a
stage that hangs shows none.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

MARK = "[opsloop-drafter]"
HEARTBEAT_SECONDS = 1.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _write_status(path: Path, status: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def run(plan: dict[str, Any]) -> int:
    status_path = Path(plan["status_path"])
    status: dict[str, Any] = {
        "state": "running",
        "stage": None,
        "pid": os.getpid(),
        "started_at": _now(),
        "stages": {stage["name"]: {"state": "pending"} for stage in plan["stages"]},
    }
    _write_status(status_path, status)
    environment = {**os.environ, **plan.get("env", {})}
    for stage in plan["stages"]:
        name = stage["name"]
        record = status["stages"][name]
        status["stage"] = name
        record.update(state="running", started_at=_now())
        _write_status(status_path, status)
        print(f"{MARK} stage {name} started: {shlex.join(stage['argv'])}", flush=True)
        try:
            code = _run_stage(stage, environment, record, status_path, status)
        except OSError as error:
            print(f"{MARK} stage {name} could not start: {error}", flush=True)
            code = 127
        record.update(state="done" if code == 0 else "failed", exit_code=code, finished_at=_now())
        print(f"{MARK} stage {name} finished: exit {code}", flush=True)
        if code != 0:
            status.update(state="failed", error=f"stage {name} exited with {code}", finished_at=_now())
            _write_status(status_path, status)
            return code
        if name == "export" and not (Path(plan["export_dir"]) / "config.json").is_file():
            record["state"] = "failed"
            status.update(
                state="failed",
                finished_at=_now(),
                error=f"export finished but {plan['export_dir']}/config.json is missing",
            )
            _write_status(status_path, status)
            print(f"{MARK} {status['error']}", flush=True)
            return 1
        _write_status(status_path, status)
    status.update(state="done", stage=None, finished_at=_now())
    _write_status(status_path, status)
    print(f"{MARK} pipeline done", flush=True)
    return 0


def _run_stage(
    stage: dict[str, Any],
    environment: dict[str, str],
    record: dict[str, Any],
    status_path: Path,
    status: dict[str, Any],
) -> int:
    process = subprocess.Popen(stage["host_argv"], cwd=stage.get("cwd") or None, env=environment)
    while True:
        try:
            code = process.wait(timeout=HEARTBEAT_SECONDS)
            break
        except subprocess.TimeoutExpired:
            spent = round(group_cpu_seconds(), 2)
            if spent != record.get("cpu_seconds"):
                record["cpu_seconds"] = spent
                _write_status(status_path, status)
    record["cpu_seconds"] = round(group_cpu_seconds(), 2)
    return code


def group_cpu_seconds() -> float:
    """CPU time of this process group's other members (from /proc) plus that of reaped children."""
    times = os.times()
    total = times.children_user + times.children_system
    try:
        entries = os.listdir("/proc")
        group, own, ticks = os.getpgid(0), os.getpid(), os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return total
    for entry in entries:
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ... utime stime
        if len(fields) > 12 and int(fields[2]) == group:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: drafter_runner.py PLAN.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(argv[1]).read_text(encoding="utf-8")))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
