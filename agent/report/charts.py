"""The report's charts, drawn by matplotlib (its object API and the Agg renderer: no display, no global
figure state) and returned as PNG bytes.

A chart is made only when there is something to draw: the acceptance chart needs a speculative
configuration with a measured acceptance length, the training chart a drafter's training steps.
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from agent.report.configurations import Point, by_configuration
from agent.report.records import TrainingCurve

DPI = 110
PERCENTILES = (("median", "p50"), ("p90", "p90"), ("p99", "p99"))


@dataclass(frozen=True)
class Chart:
    name: str  # file stem for --png
    title: str
    description: str  # alt text: what the chart shows
    png: bytes


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def throughput(measured: list[Point]) -> Chart:
    figure = Figure(figsize=(7.5, 4.2))
    axes = figure.subplots()
    concurrencies = sorted({point.level.concurrency for point in measured})
    for name, series in by_configuration(measured).items():
        xs = [point.level.concurrency for point in series]
        axes.plot(xs, [point.level.output_throughput for point in series], marker="o", label=name)
    if len(concurrencies) > 1:
        axes.set_xscale("log", base=2)
    axes.set_xticks(concurrencies, [str(value) for value in concurrencies])
    axes.set(xlabel="concurrency (requests in flight)", ylabel="output tokens/s", title="Output throughput")
    axes.grid(True, alpha=0.3)
    axes.legend()
    return Chart(
        "throughput",
        "Output throughput vs concurrency",
        "output tokens per second at each concurrency, one line per configuration",
        _png(figure),
    )


def _label(point: Point) -> str:
    return "\n".join([*textwrap.wrap(point.configuration, 16), f"@ concurrency {point.level.concurrency}"])


def _percentile_bars(axes: Axes, measured: list[Point], metric: str, title: str) -> None:
    labels = [_label(point) for point in measured]
    width = 0.8 / len(PERCENTILES)
    for index, (field, label) in enumerate(PERCENTILES):
        values = []
        for point in measured:
            value = getattr(getattr(point.level, metric), field)
            values.append(value if value is not None else 0.0)
        offsets = [position + (index - 1) * width for position in range(len(measured))]
        axes.bar(offsets, values, width=width, label=label)
    axes.set_xticks(range(len(measured)), labels, fontsize=8)
    axes.set(ylabel="milliseconds", title=title)
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()


def latency(measured: list[Point]) -> Chart:
    figure = Figure(figsize=(max(7.5, 1.3 * len(measured) + 2), 7.0))
    ttft_axes, itl_axes = figure.subplots(2, 1)
    _percentile_bars(ttft_axes, measured, "ttft_ms", "Time to first token (TTFT)")
    _percentile_bars(itl_axes, measured, "itl_ms", "Inter-token latency (ITL)")
    figure.tight_layout()
    return Chart(
        "latency",
        "TTFT and ITL percentiles",
        "median, p90 and p99 of time to first token and inter-token latency per configuration and concurrency",
        _png(figure),
    )


def acceptance(measured: list[Point]) -> Chart | None:
    speculative = [point for point in measured if point.level.spec and point.level.spec.accept_length is not None]
    if not speculative:
        return None
    figure = Figure(figsize=(max(7.5, 1.3 * len(speculative) + 2), 4.0))
    axes = figure.subplots()
    labels = [_label(point) for point in speculative]
    values = [point.level.spec.accept_length or 0.0 for point in speculative if point.level.spec]
    bars = axes.bar(range(len(values)), values, color="tab:green")
    axes.bar_label(bars, fmt="%.2f")
    axes.set_ylim(0.0, max(values) * 1.15)  # room for the labels above the bars
    axes.set_xticks(range(len(values)), labels, fontsize=8)
    axes.set(ylabel="accepted tokens per step", title="Speculative acceptance length")
    axes.grid(True, axis="y", alpha=0.3)
    return Chart(
        "acceptance",
        "Speculative acceptance per configuration",
        "mean accepted tokens per verification step (the acceptance length) of each speculative configuration",
        _png(figure),
    )


def training(curves: list[TrainingCurve]) -> Chart | None:
    if not curves:
        return None
    figure = Figure(figsize=(7.5, 4.2))
    loss_axes = figure.subplots()
    rate_axes = loss_axes.twinx()
    for curve in curves:
        steps = [point.step for point in curve.points]
        loss_axes.plot(steps, [_gap(point.loss) for point in curve.points], marker=".", label=f"{curve.name} loss")
        rate_axes.plot(
            steps,
            [_gap(point.accuracy) for point in curve.points],
            linestyle="--",
            marker=".",
            label=f"{curve.name} accuracy",
        )
    loss_axes.set(xlabel="training step", ylabel="loss", title="Drafter training")
    rate_axes.set(ylabel="accuracy (mean over draft positions)", ylim=(0.0, 1.0))
    handles = loss_axes.get_legend_handles_labels()[0] + rate_axes.get_legend_handles_labels()[0]
    labels = loss_axes.get_legend_handles_labels()[1] + rate_axes.get_legend_handles_labels()[1]
    loss_axes.legend(handles, labels, loc="center right")
    loss_axes.grid(True, alpha=0.3)
    return Chart(
        "training",
        "Drafter training progress",
        "training loss and draft accuracy by step of each drafter trained",
        _png(figure),
    )


def _gap(value: float | None) -> float:
    """A missing figure as NaN: matplotlib leaves a gap in the line there."""
    return math.nan if value is None else value


def all_charts(measured: list[Point], curves: list[TrainingCurve]) -> list[Chart]:
    charts: list[Chart | None] = [throughput(measured), latency(measured)] if measured else []
    charts += [acceptance(measured), training(curves)]
    return [chart for chart in charts if chart is not None]
