"""Putting a report together, and writing it: the HTML page and the charts as PNG files."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.report.charts import Chart, all_charts
from agent.report.configurations import points
from agent.report.page import render_page
from agent.report.records import gather
from agent.state import ProjectState


@dataclass(frozen=True)
class Report:
    html: str
    charts: list[Chart]


def build_report(state: ProjectState, state_dir: Path) -> Report:
    """The page and its charts for the run in ``state_dir``."""
    records = gather(state, state_dir)
    measured = points(records.benchmarks)
    charts = all_charts(measured, records.training)
    return Report(html=render_page(records, measured, charts, str(state_dir)), charts=charts)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` whole (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o644)  # a report is for sharing; mkstemp makes files private
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_charts(charts: list[Chart], directory: Path) -> list[Path]:
    written = []
    for chart in charts:
        path = directory / f"{chart.name}.png"
        write_atomic(path, chart.png)
        written.append(path)
    return written
