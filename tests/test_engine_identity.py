"""Readiness asks the server which model it serves: another program answering on the engine's port never
passes for the engine. The foreign server is a real HTTP server on loopback; the engine is the stand-in
engine process of test_launch_engine (the fake at the process boundary)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.tool_context import make_context
from test_launch_engine import REGISTRY, EngineStandInHost, free_port, stop

from agent.state import ProjectState
from tools.base import ToolContext
from tools.engines.config import EngineLaunchConfig
from tools.engines.health import check_health
from tools.engines.identity import FOREIGN_SERVER, expected_names
from tools.engines.readiness import WaitSettings, wait_for_ready
from tools.hosts.local import LocalHost


class ForeignServer:
    """A server someone else started: /health answers 200, and it serves ``routes`` (path -> JSON body)."""

    def __init__(self, port: int, routes: dict[str, Any]) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                known = self.path == "/health" or self.path in routes
                body = json.dumps(routes[self.path]).encode() if self.path in routes else b""
                self.send_response(200 if known else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def models(*names: str) -> dict[str, Any]:
    return {"/v1/models": {"object": "list", "data": [{"id": name, "object": "model"} for name in names]}}


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def foreign(port: int) -> Iterator[ForeignServer]:
    server = ForeignServer(port, models("someone-else/Other-7B"))
    yield server
    server.close()


def test_a_server_serving_another_model_is_not_ready(port: int, foreign: ForeignServer) -> None:
    config = EngineLaunchConfig(engine="vllm", model_path="/models/tiny", served_model_name="tiny", port=port)
    health = check_health(LocalHost(), config)
    assert not health.ok and health.foreign and health.status_code == 200
    assert health.detail.startswith(f"{FOREIGN_SERVER}:")
    assert "someone-else/Other-7B" in health.detail and "not tiny" in health.detail


def test_the_server_serving_the_launched_name_is_ready(port: int) -> None:
    server = ForeignServer(port, models("tiny", "tiny-alias"))
    try:
        named = EngineLaunchConfig(engine="vllm", model_path="/models/tiny", served_model_name="tiny", port=port)
        assert check_health(LocalHost(), named).ok
        by_path = EngineLaunchConfig(engine="vllm", model_path="/models/tiny/", port=port)
        unnamed = check_health(LocalHost(), by_path)  # no served name: the engine lists the model path
        assert not unnamed.ok and unnamed.foreign and "not /models/tiny " in unnamed.detail
    finally:
        server.close()


def test_sglang_is_also_known_by_its_model_info(port: int) -> None:
    server = ForeignServer(port, {"/get_model_info": {"model_path": "/models/tiny", "is_generation": True}})
    try:
        ours = EngineLaunchConfig(engine="sglang", model_path="/models/tiny", port=port)
        assert check_health(LocalHost(), ours).ok
        other = EngineLaunchConfig(engine="sglang", model_path="/models/other", port=port)
        health = check_health(LocalHost(), other)
        assert health.foreign and "serves /models/tiny" in health.detail
        as_vllm = EngineLaunchConfig(engine="vllm", model_path="/models/tiny", port=port)
        assert "names no model at /v1/models" in check_health(LocalHost(), as_vllm).detail
    finally:
        server.close()


def test_served_names_given_as_extra_flags_count() -> None:
    config = EngineLaunchConfig(
        engine="vllm", model_path="/m", extra_flags=["--served-model-name", "a", "b", "--enforce-eager"]
    )
    assert expected_names(config) == {"a", "b"}
    assert expected_names(config.model_copy(update={"extra_flags": ["--served-model-name=c"]})) == {"c"}


def test_a_foreign_server_on_the_port_during_a_launch_is_a_finding_never_readiness(tmp_path: Path, port: int) -> None:
    context: ToolContext = make_context(tmp_path, host=EngineStandInHost(exit_dir=tmp_path / "exits"))
    state = context.state
    assert isinstance(state, ProjectState)
    given = {
        "engine": "vllm",
        "model_path": "/models/fake",
        "port": port,
        "env": {"FAKE_ENGINE_MODE": "endless-loading"},
    }
    started = REGISTRY.execute("launch_engine", {"config": given, "engine_version": "0.33.0", "wait": False}, context)
    assert started.ok and started.output is not None, started.error
    record = next(item for item in state.processes if item.pid == started.output["pid"])
    server = ForeignServer(port, models("someone-else/Other-7B"))  # takes the port while ours still loads
    try:
        settings = WaitSettings(
            wait_timeout_seconds=3,
            hang_after_seconds=600,
            poll_seconds=0.1,
            health_every_seconds=0.2,
            fixed_deadline=True,  # the stand-in's endless load shows a rate that would move the deadline on
        )
        report = wait_for_ready(record, EngineLaunchConfig.model_validate(given), context, settings)
        assert report.outcome == "timeout" and record.state != "ready"
        assert report.health is not None and FOREIGN_SERVER in report.health
        found = [finding.summary for finding in state.findings if FOREIGN_SERVER in finding.summary]
        assert len(found) == 1 and "someone-else/Other-7B" in found[0] and "not /models/fake" in found[0]
        status = REGISTRY.execute("engine_status", {}, context)
        assert status.ok and status.output is not None and FOREIGN_SERVER in status.output["health"]
    finally:
        server.close()
        stop(context)
