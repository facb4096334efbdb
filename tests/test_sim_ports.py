"""The simulated host's ports are its own: a real service on the same port number never collides with it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sim import free_port, http_get, write_scenario
from support.tool_context import make_context, wait_for

from tools.catalog import default_registry
from tools.hosts.sandbox import sandbox_problem
from tools.hosts.sim.host import SimHost
from twin.ports import PortMap

REGISTRY = default_registry()


class _Other(http.server.BaseHTTPRequestHandler):
    """A real server on this machine that is not the engine: answers 200 to everything."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"data": [{"id": "someone-else"}]}')

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def other_service() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Other)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _launch_args(host: SimHost, port: int, name: str, tp_size: int = 2) -> dict[str, object]:
    return {
        "config": {"engine": "sglang", "model_path": str(host.model_dir), "tp_size": tp_size, "port": port},
        "name": name,
        "poll_seconds": 0.1,
        "health_every_seconds": 0.2,
    }


def test_an_engine_on_a_port_a_real_service_holds_is_launched_and_reached_on_the_simulated_host(
    tmp_path: Path, other_service: int
) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    context = make_context(tmp_path, host=host)
    result = REGISTRY.execute("launch_engine", _launch_args(host, other_service, "engine-1"), context)
    try:
        assert result.ok, result.error
        assert result.output is not None
        assert result.output["readiness"]["outcome"] == "ready"
        assert result.output["host_base_url"] == f"http://127.0.0.1:{other_service}"  # the host's own address
        reached = result.output["base_url"]  # where this machine reaches it
        assert reached and reached != result.output["host_base_url"]
        status, body = http_get(f"{reached}/v1/models")
        assert status == 200 and "Test-30B" in body and "someone-else" not in body
        assert "someone-else" in http_get(f"http://127.0.0.1:{other_service}/v1/models")[1]
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine-1"}, context)


def test_a_second_engine_on_the_same_simulated_port_cannot_bind(tmp_path: Path) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    context = make_context(tmp_path, host=host)
    first = REGISTRY.execute("launch_engine", _launch_args(host, 30000, "engine-1", tp_size=1), context)
    try:
        assert first.ok and first.output is not None and first.output["readiness"]["outcome"] == "ready"
        # A second engine on the same simulated port, started behind the launch tool's back.
        argv = ["python", "-m", "sglang.launch_server", "--model-path", str(host.model_dir), "--port", "30000"]
        log = tmp_path / "second.log"
        second = host.spawn(argv, env={"CUDA_VISIBLE_DEVICES": "1"}, log_path=log)
        assert wait_for(lambda: not host.status(second.pid, second.create_time).alive, timeout=60)
        assert "('127.0.0.1', 30000): address already in use" in log.read_text()
        assert http_get(f"{first.output['base_url']}/health")[0] == 200  # the first one is untouched
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine-1"}, context)


def test_loopback_ports_only_are_mapped(tmp_path: Path) -> None:
    ports = PortMap(tmp_path / "ports.json")
    real = ports.reach(30000)
    assert ports.reach(30000) == real  # stable
    assert ports.reach_url("http://127.0.0.1:30000/v1") == f"http://127.0.0.1:{real}/v1"
    assert ports.reach_url("localhost:30000") == f"localhost:{real}"
    assert ports.reach_url("http://10.0.0.5:30000") == "http://10.0.0.5:30000"
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    assert host.endpoint("example.org", 30000) == ("example.org", 30000)
    address, port = host.endpoint("127.0.0.1", 8000)
    assert address == "127.0.0.1" and port != 8000
    assert host.endpoint("localhost", 8000) == (address, port)


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
def test_a_sandboxed_command_on_the_simulated_host_reaches_its_engine_not_the_real_service(
    tmp_path: Path, other_service: int
) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    context = make_context(tmp_path, host=host)
    work = tmp_path / "work"
    work.mkdir()
    context.settings.allowed_write_roots = [work]
    result = REGISTRY.execute("launch_engine", _launch_args(host, other_service, "engine-1"), context)
    try:
        assert result.ok and result.output is not None, result.error
        command = f"curl -s -m 10 http://127.0.0.1:{other_service}/v1/models"
        shell = REGISTRY.execute("shell", {"command": command}, context)
        assert shell.ok and shell.output is not None, shell.error
        assert "Test-30B" in shell.output["stdout"] and "someone-else" not in shell.output["stdout"]
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine-1"}, context)
