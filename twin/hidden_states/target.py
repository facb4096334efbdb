"""Load the target for offline capture: SpecForge builds an in-process SGLang model runner from the script's
``--sglang-*`` options (``specforge/offline_capture/sglang_backend/capture.py``: ``ServerArgs(...,
disable_cuda_graph=True)``), so the target loads, and fails, the way an SGLang launch with those settings
does on this host: the scenario's rules, the hardware, and the GPU memory other processes hold.
"""

from __future__ import annotations

import argparse
import os

from twin.clock import SimClock
from twin.engine.flags import parse_flags
from twin.engine.launch import LaunchError, build_launch
from twin.engine.logs import EngineLog
from twin.engine.physics import visible_gpus
from twin.engine.plan import build_plan
from twin.engine.startup import Startup
from twin.layout import SimLayout
from twin.ledger import GpuLedgerEntry, memory_in_use
from twin.scenario import Scenario


class CaptureError(Exception):
    """The preparation fails with this message (exit status 1)."""


def sglang_argv(options: argparse.Namespace, data_parallel: int) -> list[str]:
    """The SGLang server arguments the offline capture backend runs the target with."""
    argv = [
        "--model-path",
        options.target_model_path,
        "--tp-size",
        str(options.tp_size),
        "--attention-backend",
        options.sglang_attention_backend,
        "--mem-fraction-static",
        str(options.sglang_mem_fraction_static),
        "--disable-cuda-graph",
    ]
    if data_parallel > 1:
        argv += ["--dp-size", str(data_parallel)]
    if options.trust_remote_code:
        argv.append("--trust-remote-code")
    return argv


def load_target(
    options: argparse.Namespace, scenario: Scenario, layout: SimLayout, sglang: str, data_parallel: int
) -> GpuLedgerEntry:
    """Play the target's start-up up to its first forward pass (a planned failure ends the process there); the
    returned ledger entry holds the target's GPU memory until released."""
    env = dict(os.environ)
    parsed = parse_flags("sglang", sglang_argv(options, data_parallel), sglang)
    visible = visible_gpus(scenario, env)
    capability = scenario.host.gpu_group(visible[0]).compute_capability if visible else ""
    try:
        launch = build_launch("sglang", sglang, parsed, scenario, env, capability)
    except LaunchError as error:
        raise CaptureError(f"ValueError: {error}") from None
    ledger = GpuLedgerEntry(layout.root)
    others = memory_in_use(layout.root, scenario.host.gpu_count, exclude_pid=ledger.pid)
    plan = build_plan(scenario, launch, env, layout, others)
    log = EngineLog(
        "sglang",
        values={
            "port": str(launch.port),
            "attention_backend": launch.attention_backend,
            "model_path": launch.model_path,
            "tp_size": str(launch.tp_size),
        },
    )
    startup = Startup(plan, scenario, SimClock(scenario.time_scale), log, ledger, env)
    if startup.failure is not None and startup.failure.phase == "serving":
        startup.failure = None  # no server: binding a port is not part of an in-process runner
    startup.before_server()
    startup.warmup(announce=False)
    return ledger
