"""Done through MCP alone, and shown as a report: a scripted client playing the coding agent drives a
twin bring-up (kimi-sm120: an NCCL hang, an SM120 attention kernel, the off-the-shelf drafter, a trained
one) to done through `agent mcp`; `agent report` of that run opens in headless Chromium as one file
with every chart. One bring-up serves the whole module.

The screenshot and the report are kept as test artefacts in ``$OPSLOOP_TEST_ARTIFACTS`` (default
``tests/artifacts/``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.browser import CHROMIUM, Chromium
from support.cli import REPO_ROOT, run_agent
from support.mcp_agent import bring_up
from support.mcp_client import journal_calls, stdio_client_for
from support.runbook import load_state, stop_leftovers

CHARTS = ("throughput", "latency", "acceptance", "training")
ARTIFACTS = Path(os.environ.get("OPSLOOP_TEST_ARTIFACTS") or REPO_ROOT / "tests" / "artifacts")

# Per chart in the page: drawn at its size, and with enough coloured ink (lines, bars: not only axes).
CHART_PIXELS = """(async () => Promise.all(Array.from(document.querySelectorAll('img.chart')).map(async (image) => {
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.naturalWidth; canvas.height = image.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let coloured = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    const high = Math.max(pixels[i], pixels[i + 1], pixels[i + 2]);
    const low = Math.min(pixels[i], pixels[i + 1], pixels[i + 2]);
    if (high - low > 60) coloured++;
  }
  const box = image.getBoundingClientRect();
  return {id: image.parentElement.id, width: image.naturalWidth, height: image.naturalHeight,
          shown: box.width * box.height, coloured: coloured / (pixels.length / 4)};
})))()"""


@pytest.fixture(scope="module")
def brought_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("mcp-bring-up")
    state_dir = root / "state"

    async def drive() -> str:
        with (root / "server-stderr.log").open("w") as errlog:
            async with stdio_client_for(
                state_dir, "--sim", "kimi-sm120", "--goal", "serve kimi", errlog=errlog
            ) as client:
                return await bring_up(client)

    try:
        yield state_dir, anyio.run(drive)
    finally:
        stop_leftovers(state_dir)  # the kept engine keeps serving after the client leaves, by design


def test_the_client_drove_the_bring_up_to_done_through_the_tools(brought_up: tuple[Path, str]) -> None:
    state_dir, summary = brought_up
    state = load_state(state_dir)
    assert state["status"] == "done" and state["summary"] == summary and state["policy"] == "mcp"
    attempts = [process for process in state["processes"] if process["kind"] == "engine"]
    assert len(attempts) >= 5  # two failed starts of the baseline, then each configuration
    assert [process["state"] for process in attempts].count("exited") >= 1
    assert {process["kind"] for process in state["processes"]} == {"engine", "drafter_training"}
    labels = [record["label"] for record in state["benchmarks"]]
    assert {"baseline single-stream", "off-the-shelf loaded", "trained single-stream"} <= set(labels)
    calls = journal_calls(state_dir)
    tools = {record["tool"] for record in calls}
    assert {"probe_system", "launch_engine", "diagnose_log", "run_bench", "train_drafter"} <= tools
    assert sum(record["kind"] == "intent" for record in calls) == state["step"]
    status = run_agent("status", state_dir)
    assert "**done**" in status.stdout and "policy mcp" in status.stdout and "Kept:" in status.stdout


def test_the_report_opens_in_chromium_as_one_file_with_every_chart(brought_up: tuple[Path, str]) -> None:
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install chromium (see .ci/run)")
    state_dir, _ = brought_up
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = ARTIFACTS / "mcp-bring-up-report.html"
    made = run_agent("report", state_dir, "--html", page, "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"html": str(page), "charts": []}
    html = page.read_text(encoding="utf-8")
    # One file: nothing to fetch (no script, stylesheet link or remote source), charts inline.
    assert not re.search(r"<script|<link|src=\"(?!data:)|url\(", html)
    for heading in ("Outcome", "Configuration kept, and why", "Charts", "Benchmarks", "Launch attempts"):
        assert f"<h2>{heading}" in html
    assert "nccl_hang" in html and "NCCL_P2P_DISABLE=1" in html and "attention_backend=triton" in html

    browser = Chromium(state_dir.parent / "chromium-profile", state_dir.parent / "chromium.log")
    try:
        browser.open(page.as_uri())
        charts: list[dict[str, Any]] = browser.evaluate(CHART_PIXELS)
        shot = browser.screenshot(ARTIFACTS / "mcp-bring-up-report.png")
        rows = browser.evaluate("document.querySelectorAll('table tbody tr').length")
    finally:
        browser.close()
    assert [chart["id"] for chart in charts] == [f"chart-{name}" for name in CHARTS]
    for chart in charts:
        assert chart["width"] > 300 and chart["height"] > 200 and chart["shown"] > 0, chart
        assert chart["coloured"] > 0.002, chart  # data drawn in colour, not an empty frame
    assert shot.startswith(b"\x89PNG") and len(shot) > 50_000 and rows > 10


def test_png_gives_the_charts_alone(brought_up: tuple[Path, str], tmp_path: Path) -> None:
    state_dir, _ = brought_up
    made = run_agent("report", state_dir / "latest.json", "--png", tmp_path / "charts")
    assert made.returncode == 0, made.stderr
    written = sorted(path.name for path in (tmp_path / "charts").iterdir())
    assert written == sorted(f"{name}.png" for name in CHARTS)
    for name in written:
        assert (tmp_path / "charts" / name).read_bytes().startswith(b"\x89PNG")
    assert not (state_dir / "report.html").exists()  # --png alone writes no page
