"""Waiting for a starting engine: progress decides the deadline, engine_status can keep watching, and the
settings the engine reports are read from its log."""

from __future__ import annotations

from pathlib import Path

from support.sim import write_scenario
from support.tool_context import make_context

from tools.catalog import default_registry
from tools.engines.deadline import SLACK, LoadDeadline
from tools.hosts.sim.host import SimHost
from tools.logs.settings_dump import engine_settings

REGISTRY = default_registry()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_deadline_follows_the_measured_rate() -> None:
    clock = _Clock()
    deadline = LoadDeadline(base_seconds=100.0, hang_after_seconds=10.0, clock=clock)
    clock.now = 90.0
    deadline.observe_fraction(0.01)  # too little to project from
    assert deadline.limit_seconds() == 100.0 and not deadline.due()
    clock.now = 120.0
    deadline.observe_fraction(0.4)  # 40% in 120 s: the load takes 300 s
    assert deadline.projected_load_seconds() == 300.0
    assert deadline.limit_seconds() == 300.0 * SLACK + 10.0 and not deadline.due()
    clock.now = 400.0
    deadline.observe_weights_done()
    assert deadline.limit_seconds() == 400.0 * SLACK + 10.0
    assert "weights loaded in 400 s" in deadline.describe()
    fixed = LoadDeadline(base_seconds=100.0, hang_after_seconds=10.0, fixed=True, clock=clock)
    fixed.observe_fraction(0.5)
    assert fixed.limit_seconds() == 100.0
    again = LoadDeadline(base_seconds=10.0, hang_after_seconds=5.0, clock=clock, started_ago=60.0)
    again.observe_fraction(0.5)  # read back from the log at once: 50% in the 60 s since the engine started
    assert again.projected_load_seconds() == 120.0 and again.limit_seconds() == 185.0


def test_settings_the_engines_print_are_read_under_launch_config_names() -> None:
    sglang = engine_settings(
        [
            "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=8, mem_fraction_static=0.88, "
            "attention_backend='fa3', disable_cuda_graph=False, cuda_graph_max_bs=256, max_running_requests=None)"
        ]
    )
    assert sglang == {
        "mem_fraction": 0.88,
        "attention_backend": "fa3",
        "disable_cuda_graph": False,
        "cuda_graph_max_bs": 256,
    }
    vllm = engine_settings(
        [
            "(APIServer pid=1) INFO 12-01 13:53:48 [api_utils.py:286] non-default args: {'model': '/m', "
            "'gpu_memory_utilization': 0.8}",
            "(EngineCore pid=2) INFO 12-01 13:54:03 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with "
            "config: model='/m', speculative_config=None, max_seq_len=1024, enforce_eager=False",
        ]
    )
    assert vllm == {"context_length": 1024, "disable_cuda_graph": False, "mem_fraction": 0.8}


def _slow_load(tmp_path: Path, load_seconds: float = 6.0) -> SimHost:
    # At 1000x: load_seconds of loading on the wall clock, a progress line every 1/30 of it.
    load = load_seconds * 1000.0
    scenario = write_scenario(tmp_path, load=load, progress_interval=load / 30, time_scale=1000.0)
    return SimHost.from_scenario(str(scenario), tmp_path / "state")


def _launch(host: SimHost, **extra: object) -> dict[str, object]:
    return {
        "config": {"engine": "sglang", "model_path": str(host.model_dir), "tp_size": 2, "port": 30000},
        "name": "engine-1",
        "poll_seconds": 0.1,
        "health_every_seconds": 0.2,
        **extra,
    }


def test_a_load_past_the_base_timeout_is_waited_for_while_it_progresses(tmp_path: Path) -> None:
    host = _slow_load(tmp_path, load_seconds=30.0)
    # The base deadline (12 s) passes long before the load (30 s) ends; the measured rate moves it. The base only has
    # to cover the stand-in's start-up and its first shard (8 s and 2 s on a starved machine). Silence is judged a
    # hang only after 20 s, so a starved test machine is not mistaken for a hung engine.
    context = make_context(tmp_path, host=host, load_timeout_seconds=12.0, hang_after_seconds=20.0)
    try:
        result = REGISTRY.execute("launch_engine", _launch(host), context)
        assert result.ok and result.output is not None, result.error
        readiness = result.output["readiness"]
        assert readiness["outcome"] == "ready", readiness
        assert readiness["projected_load_seconds"] and readiness["deadline_seconds"] > 1.0
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine-1", "grace_seconds": 1}, context)


def test_a_fixed_deadline_ends_the_wait_and_engine_status_keeps_watching(tmp_path: Path) -> None:
    host = _slow_load(tmp_path)
    context = make_context(tmp_path, host=host, hang_after_seconds=20.0)
    try:
        result = REGISTRY.execute("launch_engine", _launch(host, wait_timeout_seconds=1.0), context)
        assert result.ok and result.output is not None
        assert result.output["readiness"]["outcome"] == "timeout"  # the engine is left running
        # The watch ends as soon as the engine serves; its length only bounds a starved test machine.
        watched = REGISTRY.execute("engine_status", {"name": "engine-1", "wait_ready_seconds": 120.0}, context)
        assert watched.ok and watched.output is not None
        assert watched.output["readiness"]["outcome"] == "ready", watched.output["readiness"]
        assert watched.output["state"] == "ready"
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine-1", "grace_seconds": 1}, context)
