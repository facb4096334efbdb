"""Log tools on multi-GB files: ``tail_log`` against GNU ``tail -n 200``, ``diagnose_log`` against ``grep -c``.

Synthetic engine logs (see :mod:`benchmarks.log_files`) of each ``--sizes-gb`` are written to a
temporary directory (scaled down, and said so, when the disk has too little room) and deleted
afterwards. Files are read from a warm page cache (just written), as an agent reads a live log.

- tail: the ``tail_log`` tool through the tool registry (what the agent pays per call), its reader
  alone, GNU ``tail -n 200`` as a process, and ``/bin/true`` as a process (the cost of any process).
- diagnosis: the ``diagnose_log`` tool on each file (it reads a bounded head and tail), ``grep -c -E``
  with the library's failure patterns over the whole file, and both on a ``--scan-mb`` file that the
  diagnosis reads whole (its scanning throughput, comparable to grep's).

    python -m benchmarks.logs --sizes-gb 1,5
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.state import ProjectState
from benchmarks.common import emit, machine, note, percentile, ratio
from benchmarks.log_files import write_log
from tools.base import ToolContext, ToolRegistry, ToolSettings
from tools.hosts.local import LocalHost
from tools.logs.diagnose import diagnose_file
from tools.logs.diagnose_tool import DiagnoseLogTool
from tools.logs.library import load_library
from tools.logs.reader import read_last_lines
from tools.logs.tail_tool import TailLogTool

GIB = 2**30
MIB = 2**20
TAIL_LINES = 200
SPARE_BYTES = 2 * GIB  # left free on the disk beyond the files


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    durations = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        durations.append(time.perf_counter() - started)
    return percentile(durations, 0.5)


def run_quiet(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, env={**os.environ, "LC_ALL": "C"}
    )


def to_ere(pattern: str) -> str:
    """A library pattern (Python syntax) as a POSIX extended regex for GNU grep: ``(?:`` groups become
    plain groups, ``\\d`` a digit class, ``\\w`` inside brackets ``[:alnum:]_``; GNU grep reads the
    other escapes the library uses (``\\b \\s \\S \\w``) as Python does."""
    out: list[str] = []
    index, in_bracket = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped == "d":
                out.append("0-9" if in_bracket else "[0-9]")
            elif escaped == "w" and in_bracket:
                out.append("[:alnum:]_")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if not in_bracket and pattern.startswith("(?:", index):
            out.append("(")
            index += 3
            continue
        if char == "[" and not in_bracket:
            in_bracket = True
        elif char == "]" and in_bracket:
            in_bracket = False
        out.append(char)
        index += 1
    return "".join(out)


def write_grep_patterns(path: Path) -> int:
    """The library's failure patterns, one a line, for ``grep -E -f``; returns how many."""
    patterns = [to_ere(pattern) for signature in load_library().signatures for pattern in signature.patterns]
    path.write_text("\n".join(patterns) + "\n", encoding="utf-8")
    return len(patterns)


def plan_sizes(requested: list[float], directory: Path) -> tuple[list[int], str | None]:
    """Sizes in bytes that fit on the disk (one file at a time, largest first to go); a note if scaled."""
    free = shutil.disk_usage(directory).free - SPARE_BYTES
    sizes = [int(gigabytes * GIB) for gigabytes in requested]
    if max(sizes) <= free:
        return sizes, None
    scale = max(free, 0) / max(sizes)
    scaled = [max(int(size * scale), 64 * MIB) for size in sizes]
    return scaled, (
        f"only {free / GIB:.1f} GiB free (after {SPARE_BYTES // GIB} GiB spare): sizes scaled by {scale:.3f}"
    )


def grep_command(patterns: Path, path: Path) -> list[str]:
    return ["grep", "-c", "-E", "-f", str(patterns), str(path)]


def measure_file(
    path: Path, size: int, registry: ToolRegistry, context: ToolContext, repeats: int, patterns: Path
) -> dict[str, Any]:
    tail_tool = median_seconds(
        lambda: registry.execute("tail_log", {"path": str(path), "lines": TAIL_LINES}, context), repeats
    )
    tail_reader = median_seconds(lambda: read_last_lines(path, TAIL_LINES), repeats)
    gnu_tail = median_seconds(lambda: run_quiet(["tail", "-n", str(TAIL_LINES), str(path)]), repeats)
    spawn = median_seconds(lambda: run_quiet(["true"]), repeats)
    result = registry.execute("diagnose_log", {"path": str(path)}, context)
    output = result.output or {}
    diagnose = median_seconds(
        lambda: registry.execute("diagnose_log", {"path": str(path)}, context), max(3, repeats // 3)
    )
    started = time.perf_counter()
    grep = run_quiet(grep_command(patterns, path))
    grep_seconds = time.perf_counter() - started
    return {
        "size_bytes": size,
        "tail": {
            "tool_ms": round(tail_tool * 1000, 3),
            "reader_ms": round(tail_reader * 1000, 3),
            "gnu_tail_ms": round(gnu_tail * 1000, 3),
            "process_start_ms": round(spawn * 1000, 3),
            "tool_vs_gnu_tail": ratio(tail_tool, gnu_tail),
            "reader_vs_gnu_tail": ratio(tail_reader, gnu_tail),
        },
        "diagnose": {
            "tool_ms": round(diagnose * 1000, 1),
            "class": output.get("class"),
            "bytes_read": output.get("bytes_read"),
            "read_mb_per_s": round((output.get("bytes_read") or 0) / diagnose / 1e6, 1),
            "file_mb_per_s": round(size / diagnose / 1e6, 1),
        },
        "grep": {
            "seconds": round(grep_seconds, 3),
            "matching_lines": int(grep.stdout or b"0"),
            "mb_per_s": round(size / grep_seconds / 1e6, 1),
        },
        "grep_vs_diagnose_time": ratio(grep_seconds, diagnose),
    }


def measure_scan(path: Path, size: int, patterns: Path) -> dict[str, Any]:
    """Diagnosis reading the whole file (as a window) against grep on the same bytes."""
    started = time.perf_counter()
    diagnosis = diagnose_file(path, head_bytes=0, tail_bytes=size)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    run_quiet(grep_command(patterns, path))
    grep_seconds = time.perf_counter() - started
    return {
        "size_bytes": size,
        "diagnose_seconds": round(seconds, 3),
        "diagnose_class": diagnosis.diagnosis_class,
        "diagnose_mb_per_s": round(size / seconds / 1e6, 1),
        "grep_seconds": round(grep_seconds, 3),
        "grep_mb_per_s": round(size / grep_seconds / 1e6, 1),
        "diagnose_vs_grep_time": ratio(seconds, grep_seconds),
    }


def targets(files: list[dict[str, Any]], scan: dict[str, Any]) -> dict[str, Any]:
    """Where the figures stand against the issue's targets."""
    tool_ratios = [item["tail"]["tool_vs_gnu_tail"] for item in files]
    largest = files[-1]
    return {
        "tail_target": {
            "max_ratio_vs_gnu_tail": 2.0,
            "worst_tool_ratio": max(tool_ratios),
            "worst_reader_ratio": max(item["tail"]["reader_vs_gnu_tail"] for item in files),
            "met": max(tool_ratios) <= 2.0,
            "size_dependence": ratio(largest["tail"]["tool_ms"], files[0]["tail"]["tool_ms"]),
        },
        "diagnose_target": {
            "min_mb_per_s": 200,
            "scan_mb_per_s": scan["diagnose_mb_per_s"],
            "largest_file_bytes_read": largest["diagnose"]["bytes_read"],
            "largest_file_bytes": largest["size_bytes"],
            "size_dependence": ratio(largest["diagnose"]["tool_ms"], files[0]["diagnose"]["tool_ms"]),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes-gb", default="1,5", help="File sizes in GiB, comma-separated")
    parser.add_argument("--scan-mb", type=float, default=16.0, help="Size of the file diagnosed whole (MiB)")
    parser.add_argument("--repeats", type=int, default=30, help="Runs per tail measurement (median)")
    parser.add_argument("--directory", default=None, help="Where to write the files (default: a temp dir)")
    options = parser.parse_args(argv)
    for tool in ("tail", "grep", "true"):
        if shutil.which(tool) is None:
            sys.exit(f"benchmarks.logs: {tool} is not installed")
    requested = [float(part) for part in options.sizes_gb.split(",") if part.strip()]
    started = time.perf_counter()
    registry = ToolRegistry([TailLogTool(), DiagnoseLogTool()])
    files: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="opsloop-log-bench-", dir=options.directory) as scratch:
        directory = Path(scratch)
        context = ToolContext(
            state=ProjectState(goal="log benchmark"),
            state_dir=directory / "state",
            host=LocalHost(exit_dir=directory / "exits"),
            settings=ToolSettings(engine_python=sys.executable, readable_log_dirs=[directory]),
        )
        patterns = directory / "patterns.txt"
        pattern_count = write_grep_patterns(patterns)
        sizes, scaled = plan_sizes(requested, directory)
        for size in sizes:
            path = directory / "engine.log"
            real_size = write_log(path, size)
            note(f"wrote {real_size / GIB:.2f} GiB")
            files.append(measure_file(path, real_size, registry, context, options.repeats, patterns))
            path.unlink()
        scan_path = directory / "scan.log"
        scan = measure_scan(scan_path, write_log(scan_path, int(options.scan_mb * MIB)), patterns)
    emit(
        {
            "benchmark": "logs",
            "tail_lines": TAIL_LINES,
            "requested_gb": requested,
            "scaled": scaled,
            "page_cache": "warm (files read right after being written)",
            "grep": "LC_ALL=C grep -c -E -f PATTERNS FILE",
            "grep_patterns": pattern_count,
            "files": files,
            "scan": scan,
            **targets(files, scan),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
