"""The report as one self-contained HTML page: inline styles, charts as base64 PNG, no script, nothing
fetched. Every text from the run is escaped and masked for secrets."""

from __future__ import annotations

import base64
import html
from typing import Any

from agent.report.charts import Chart
from agent.report.configurations import Point, changes, kept
from agent.report.records import LaunchAttempt, RunRecords
from tools.redact import redact_text

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #1d2330; }
body { padding: 0 1rem; }
h1 { font-size: 1.5rem; }
h2 { margin-top: 2rem; border-bottom: 1px solid #dde; padding-bottom: .2rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
td, th { border: 1px solid #dde; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f4f8; }
td.number { text-align: right; }
pre { background: #f6f7f9; padding: .8rem; white-space: pre-wrap; }
figure { margin: 1.2rem 0; }
img.chart { max-width: 100%; border: 1px solid #eee; }
.status { font-weight: bold; padding: .1rem .5rem; border-radius: 4px; }
.done { background: #d9f2dd; }
.blocked, .running { background: #fff1c7; }
.failed { background: #f8d4d4; }
code { font-size: .88em; }
"""


def _text(value: object) -> str:
    return html.escape(redact_text(str(value)))


def _number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_text(header)}</th>" for header in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="number">{cell}</td>' if index in numeric else f"<td>{cell}</td>"
            for index, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _outcome(records: RunRecords) -> str:
    state = records.state
    summary = f"<pre>{_text(state.summary)}</pre>" if state.summary else "<p>No closing report was written.</p>"
    questions = "".join(
        f"<li>{_text(question.id)}: {_text(question.question)}</li>" for question in state.pending_questions()
    )
    waiting = f"<p>Waiting for a human:</p><ul>{questions}</ul>" if questions else ""
    return f'<p>Status: <span class="status {_text(state.status)}">{_text(state.status)}</span></p>{summary}{waiting}'


def _kept(records: RunRecords) -> str:
    config = kept(records.launches, records.benchmarks)
    if not config:
        return "<p>No engine configuration was launched or measured.</p>"
    reasons = [line.strip() for line in (records.state.summary or "").splitlines() if "kept" in line.lower()]
    why = (
        "".join(f"<p>{_text(line)}</p>" for line in reasons)
        or "<p>The last configuration that became ready (the run's summary gives no other reason).</p>"
    )
    rows = [[f"<code>{_text(key)}</code>", _text(value)] for key, value in _settings(config)]
    return why + _table(["setting", "value"], rows)


def _settings(config: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in config.items():
        if isinstance(value, dict):
            items += _settings(value, f"{prefix}{key}.")
        elif value not in (None, [], False) or key == "engine":
            items.append((f"{prefix}{key}", value))
    return items


def _attempts(launches: list[LaunchAttempt]) -> str:
    if not launches:
        return "<p>No engine was launched.</p>"
    changed = changes(launches)
    rows = []
    for index, attempt in enumerate(launches):
        cause = attempt.error or " ".join(
            part for part in (attempt.diagnosis or "", f"({attempt.key_line})" if attempt.key_line else "") if part
        )
        if attempt.outcome == "ready":
            remedy = ""
        elif index + 1 < len(launches):
            remedy = f"next attempt: {changed[index + 1]}"
        else:
            remedy = "suggested: " + "; ".join(attempt.suggested[:2]) if attempt.suggested else "none tried"
        rows.append(
            [
                str(attempt.number),
                _text(attempt.process or ""),
                _text(changed[index]),
                _text(attempt.outcome),
                _text(cause),
                _text(remedy),
            ]
        )
    return _table(["#", "process", "change", "outcome", "cause", "remedy"], rows, numeric={0})


def _benchmarks(measured: list[Point]) -> str:
    if not measured:
        return "<p>No benchmark was run.</p>"
    rows = []
    for point in measured:
        level = point.level
        accept = level.spec.accept_length if level.spec else None
        rows.append(
            [
                _text(point.configuration),
                _text(point.benchmark),
                str(level.concurrency),
                f"{level.completed}/{level.num_requests}",
                _number(level.output_throughput),
                _number(level.ttft_ms.median),
                _number(level.ttft_ms.p99),
                _number(level.itl_ms.median),
                _number(level.itl_ms.p99),
                _number(accept, 2),
            ]
        )
    headers = ["configuration", "benchmark", "concurrency", "completed", "output tok/s", "TTFT p50 ms", "TTFT p99 ms"]
    return _table([*headers, "ITL p50 ms", "ITL p99 ms", "accept length"], rows, numeric=set(range(2, 10)))


def _figure(chart: Chart) -> str:
    data = base64.b64encode(chart.png).decode("ascii")
    return (
        f'<figure id="chart-{chart.name}"><img class="chart" alt="{_text(chart.description)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{_text(chart.title)}</figcaption></figure>'
    )


def render_page(records: RunRecords, measured: list[Point], charts: list[Chart], source: str) -> str:
    state = records.state
    sections = [
        f"<h1>{_text(state.goal)}</h1>",
        f"<p>Run <code>{_text(state.run_id)}</code>, {state.step} steps, {state.usage.wall_seconds:.0f} s; "
        f"started {_text(state.created_at)}, updated {_text(state.updated_at)}.</p>",
        "<h2>Outcome</h2>",
        _outcome(records),
        "<h2>Configuration kept, and why</h2>",
        _kept(records),
        "<h2>Charts</h2>",
        "".join(_figure(chart) for chart in charts) or "<p>Nothing was measured, so there is nothing to chart.</p>",
        "<h2>Benchmarks</h2>",
        _benchmarks(measured),
        "<h2>Launch attempts</h2>",
        _attempts(records.launches),
        f"<p><small>Made by <code>agent report</code> from the state document and the journal in "
        f"<code>{_text(source)}</code>.</small></p>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_text(state.goal)}: report</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )
