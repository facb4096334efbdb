"""Stand-in for an SGLang or vLLM server process on the simulated host.

Usage (written by the simulated host's command translation, never by hand)::

    python -m twin.engine --scenario FILE --sim-root DIR --engine sglang --entry module -- <real flags>

It parses the real flags, plans the launch from the scenario, plays the start-up in accelerated
time, and then serves real HTTP on 127.0.0.1:<port>.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from twin.clock import SimClock
from twin.engine.cluster import node_role
from twin.engine.flag_tables import parse_version
from twin.engine.flags import HELP, help_text, parse_flags
from twin.engine.http import HttpServer
from twin.engine.launch import LaunchError, build_launch
from twin.engine.logs import EngineLog
from twin.engine.physics import visible_gpus
from twin.engine.plan import HostNow, Plan, build_plan
from twin.engine.service import Service
from twin.engine.startup import Startup
from twin.hardware import fault_kernel_lines
from twin.host_state import HostState
from twin.layout import SimLayout, materialize
from twin.ledger import GpuLedgerEntry, memory_in_use
from twin.loader import ScenarioError, load_scenario
from twin.ports import PortMap, SimulatedPortBusy
from twin.scenario import Scenario

MODULES = {"sglang": "sglang.launch_server", "vllm": "vllm.entrypoints.openai.api_server"}


def _own_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="twin.engine")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--sim-root", required=True, type=Path)
    parser.add_argument("--engine", required=True, choices=["sglang", "vllm"])
    parser.add_argument("--entry", default="module", choices=["module", "script"])
    split = argv.index("--") if "--" in argv else len(argv)
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def _not_installed(engine: str, entry: str) -> int:
    if entry == "script":
        sys.stderr.write(f"{engine}: command not found\n")
        return 127
    sys.stderr.write(
        f"{sys.executable}: Error while finding module specification for '{MODULES[engine]}' "
        f"(ModuleNotFoundError: No module named '{engine}')\n"
    )
    return 1


async def _serve(plan: Plan, scenario: Scenario, startup: Startup, log: EngineLog, ledger: GpuLedgerEntry) -> None:
    service = Service(plan, scenario, log)
    http = HttpServer(service.handle, service.access_log)
    launch = plan.launch
    host = str(launch.parsed.values.get("--host") or "127.0.0.1")
    try:
        server = await _listen(http, launch.port, ledger)
    except (OSError, SimulatedPortBusy):
        startup.bind_failed(
            [
                f"{{main_prefix}}ERROR:    [Errno 98] error while attempting to bind on address "
                f"('{host}', {launch.port}): address already in use"
            ]
        )
        return
    startup.text.server_listening(host, launch.port)
    if launch.engine == "sglang":
        ledger.update(phase="warmup")
        await asyncio.to_thread(startup.warmup)
    service.ready = True
    ledger.update(phase="ready")
    startup.text.ready()
    async with server:
        await asyncio.gather(server.serve_forever(), service.log_stats(), startup.watch_serving())


async def _listen(http: HttpServer, port: int, ledger: GpuLedgerEntry) -> asyncio.Server:
    """Listen on ``port``; on a simulated host, on the real port standing for it (``twin.ports``)."""
    ports = PortMap.from_environment()
    if ports is None:
        return await asyncio.start_server(http.serve_connection, "127.0.0.1", port, reuse_address=True)
    real = ports.claim(port, ledger.pid, ledger.create_time)
    try:
        return await asyncio.start_server(http.serve_connection, "127.0.0.1", real, reuse_address=True)
    except OSError:  # something outside the simulated host took that real port meanwhile
        real = ports.claim(port, ledger.pid, ledger.create_time, fresh=True)
        return await asyncio.start_server(http.serve_connection, "127.0.0.1", real, reuse_address=True)


def main(argv: list[str] | None = None) -> int:
    own, engine_argv = _own_arguments(list(sys.argv[1:] if argv is None else argv))
    try:
        scenario, _ = load_scenario(own.scenario)
    except ScenarioError as error:
        sys.stderr.write(f"{error}\n")
        return 2
    version = scenario.package_version(own.engine)
    if version is None:
        return _not_installed(own.engine, own.entry)
    if own.engine == "sglang" and own.entry == "module" and parse_version(version) >= (0, 5, 23):
        sys.stderr.write(
            "UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is "
            "the recommended entrypoint.\n"
        )
    if HELP & set(engine_argv):
        sys.stdout.write(help_text(own.engine, version))
        return 0
    parsed = parse_flags(own.engine, engine_argv, version)
    env = dict(os.environ)
    lost = {fault.gpu for _, fault in HostState(own.sim_root, scenario).active_faults() if fault.lost}
    visible = visible_gpus(scenario, env, lost)
    capability = scenario.host.gpu_group(visible[0]).compute_capability if visible else ""
    try:
        launch = build_launch(own.engine, version, parsed, scenario, env, capability)
    except LaunchError as error:
        sys.stderr.write(f"usage: {own.engine} serve [options]\n{own.engine} serve: error: {error}\n")
        return 2
    layout = SimLayout(own.sim_root)
    if not layout.model_dir(scenario).is_dir():
        materialize(layout, scenario)  # started without a simulated host (e.g. by hand)
    ledger = GpuLedgerEntry(layout.root)
    others = memory_in_use(layout.root, scenario.host.gpu_count, exclude_pid=ledger.pid)
    host_state = HostState(layout.root, scenario)
    host_state.start_clock()  # already running when a simulated host started this engine
    now = HostNow(host_state.next_launch(), host_state.seconds(), host_state.active_faults(), host_state.struck())
    plan = build_plan(scenario, launch, env, layout, others, now)
    for index in plan.strike_at_start:
        host_state.strike(index, fault_kernel_lines(scenario.host.faults[index]))
    log = EngineLog(
        own.engine,
        values={
            "port": str(launch.port),
            "attention_backend": launch.attention_backend,
            "model_path": launch.model_path,
            "tp_size": str(launch.tp_size),
        },
    )
    role = node_role(own.engine, parsed.values)
    startup = Startup(plan, scenario, SimClock(scenario.time_scale), log, ledger, env, role, host_state)
    startup.before_server()
    if startup.failure is not None and startup.failure.phase == "serving" and not startup.failure.after_seconds:
        startup.fail()
    if role is not None and role.rank > 0:
        _follow_node_zero(startup)  # ranks above 0 serve no HTTP; they live as long as node 0 does
    asyncio.run(_serve(plan, scenario, startup, log, ledger))
    return 0


def _follow_node_zero(startup: Startup) -> None:
    """A rank above 0 after start-up: ready for node 0's requests; exits when node 0 goes away."""
    startup.log.info("The node is ready and waits for requests from node 0.")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
