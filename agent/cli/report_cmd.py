"""``agent report``: the run as one self-contained HTML file with charts (``--html``), or the charts alone
as PNG files (``--png``). It only reads the state directory, so it works while an agent runs there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.app import app
from agent.cli.common import JsonOption, StateArgument, StateDirOption, locate, print_json, print_text, usage_errors
from agent.events import UsageError
from agent.store import StateStore

HtmlOption = Annotated[
    Path | None, typer.Option("--html", metavar="FILE", help="Write the report here (default: STATE/report.html).")
]
PngOption = Annotated[Path | None, typer.Option("--png", metavar="DIR", help="Write the charts as PNG files here.")]


@app.command()
def report(
    target: StateArgument = None,
    state_dir: StateDirOption = None,
    html: HtmlOption = None,
    png: PngOption = None,
    json_output: JsonOption = False,
) -> None:
    """Write the run's report: outcome, launch attempts, the configuration kept, and charts."""
    from agent.report.build import build_report, write_atomic, write_charts

    with usage_errors():
        directory, file = locate(target, state_dir)
        state = StateStore(directory).load(file)
        html_path = html if html is not None or png is not None else directory / "report.html"
        built = build_report(state, directory)
        try:
            if html_path is not None:
                write_atomic(html_path, built.html.encode("utf-8"))
            charts = write_charts(built.charts, png) if png is not None else []
        except OSError as error:
            raise UsageError(f"cannot write the report: {error.strerror or error}") from None
    if json_output:
        print_json({"html": str(html_path) if html_path else None, "charts": [str(path) for path in charts]})
        return
    if html_path is not None:
        print_text(f"Report: {html_path} ({len(built.charts)} charts)")
    for path in charts:
        print_text(f"Chart: {path}")
