"""Scenario format version 2 on the simulated host: outcomes by attempt, delayed crashes, faults that strike
mid-run, I/O of a slow load, the host's OOM killer. Version 1 files may not use any of it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from support.sim import wait_healthy, write_scenario
from support.tool_context import wait_for

from tools.hosts.sim.host import SimHost
from twin.loader import ScenarioError, load_scenario

ENGINE = "/opt/engines/sglang/bin/python"


def _host(tmp_path: Path, extra: str, **values: object) -> SimHost:
    return SimHost.from_scenario(str(write_scenario(tmp_path, extra, format_version=2, **values)), tmp_path / "state")


def _start(host: SimHost, log: Path, *flags: str) -> tuple[int, float]:
    argv = [ENGINE, "-m", "sglang.launch_server", "--model-path", str(host.model_dir), "--tp-size", "2", *flags]
    spawned = host.spawn(argv, env={}, log_path=log)
    return spawned.pid, spawned.create_time


def _wait_exit(host: SimHost, identity: tuple[int, float], timeout: float = 60.0) -> None:
    assert wait_for(lambda: not host.status(*identity).alive, timeout=timeout)


def _stop(host: SimHost, identity: tuple[int, float]) -> None:
    host.signal_group(*identity, signal.SIGKILL)
    _wait_exit(host, identity)


@pytest.mark.parametrize(
    "extra",
    [
        'sources = ["https://example.org"]',
        '[[rules]]\nname = "x"\noutcome = "hang"\n[rules.when]\nattempt = 1',
        '[[rules]]\nname = "x"\noutcome = "crash"\nafter_seconds = 600.0',
        "[engine.load]\nreads_weights = true",
    ],
)
def test_a_version_1_file_may_not_use_version_2_fields(tmp_path: Path, extra: str) -> None:
    text = write_scenario(tmp_path, "").read_text()
    head, _, rest = text.partition("\n[host]")
    path = tmp_path / "v1.toml"
    path.write_text(f"{head}\n{extra}\n[host]{rest}" if extra.startswith("sources") else f"{text}\n{extra}\n")
    with pytest.raises(ScenarioError, match="needs format_version = 2"):
        load_scenario(str(path))
    path.write_text(path.read_text().replace("format_version = 1", "format_version = 2"))
    assert load_scenario(str(path))[0].format_version == 2


def test_outcomes_depend_on_the_attempt_number(tmp_path: Path) -> None:
    host = _host(
        tmp_path,
        '[[rules]]\nname = "first start hangs in the first all-reduce"\noutcome = "hang"\nat = "init"\n'
        "[rules.when]\nattempt = 1\n",
    )
    first = _start(host, tmp_path / "first.log", "--port", "30000")
    # Stopped only once it has started (and so counted as the first start), then left to hang a moment.
    assert wait_for(lambda: "Init torch distributed begin" in (tmp_path / "first.log").read_text(), timeout=120)
    time.sleep(1.0)
    assert host.status(*first).alive and "Load weight begin" not in (tmp_path / "first.log").read_text()
    _stop(host, first)
    second = _start(host, tmp_path / "second.log", "--port", "30000")
    try:
        wait_healthy(host.endpoint("127.0.0.1", 30000)[1], log=tmp_path / "second.log")
    finally:
        _stop(host, second)


def test_a_delayed_crash_is_silent_until_it_fires(tmp_path: Path) -> None:
    watchdog = (
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600086 "
        "milliseconds before timing out."
    )
    host = _host(
        tmp_path,
        f'[[rules]]\nname = "watchdog"\noutcome = "crash"\nat = "init"\nafter_seconds = 600.0\nexit_code = 134\n'
        f"log = ['{watchdog}']\n",
        time_scale=300.0,
    )
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    _wait_exit(host, identity)
    lines = (tmp_path / "engine.log").read_text().splitlines()
    begin = next(index for index, line in enumerate(lines) if "Init torch distributed begin." in line)
    crash = next(index for index, line in enumerate(lines) if "Watchdog caught collective operation timeout" in line)
    assert all("distributed" in line or "allreduce" in line.lower() for line in lines[begin : crash - 1])
    assert host.status(*identity).exit_code == 134


def test_a_gpu_that_falls_off_the_bus_mid_load_is_gone_from_later_probes(tmp_path: Path) -> None:
    fault = (
        '[[host.faults]]\ngpu = 1\nxid = [79]\nlost = true\nafter_launch = 1\nat = "load"\nprogress = 0.5\n'
        "engine_log = ['RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)']\n"
    )
    host = _host(tmp_path, fault)
    assert len(host.probe_gpus().gpus) == 2  # healthy before
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    _wait_exit(host, identity)
    assert "NCCL error: unhandled cuda error" in (tmp_path / "engine.log").read_text()
    probe = host.probe_gpus()
    assert [gpu.index for gpu in probe.gpus] == [0]
    assert probe.error and "Unable to determine the device handle for GPU 00000000:21:00.0" in probe.error
    kernel = host.run(["dmesg"], timeout=30).stdout
    assert "79, pid=2817, name=python3, GPU has fallen off the bus" in kernel
    listed = host.run(["nvidia-smi", "-L"], timeout=30)
    assert listed.stdout.count("GPU ") == 1 and "Unknown Error" in listed.stderr
    again = _start(host, tmp_path / "again.log", "--port", "30000")
    _wait_exit(host, again)
    assert "invalid device ordinal" in (tmp_path / "again.log").read_text()


def test_a_load_that_reads_weights_moves_io_counters_before_gpu_memory(tmp_path: Path) -> None:
    host = _host(
        tmp_path,
        '[engine.load]\ngpu_memory = "at_end"\nreads_weights = true\n',
        load=4000.0,
        progress_interval=4000.0,
        time_scale=1000.0,
    )
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    try:
        assert wait_for(lambda: "Load weight begin" in (tmp_path / "engine.log").read_text(), timeout=30)
        first = host.status(*identity).read_bytes or 0
        memory = host.gpu_memory_used_mib()
        assert wait_for(lambda: (host.status(*identity).read_bytes or 0) > first + 1024 * 1024, timeout=10)
        if "Load weight end" not in (tmp_path / "engine.log").read_text():
            assert host.gpu_memory_used_mib() == memory  # the weights are not on the GPUs yet
    finally:
        _stop(host, identity)


def test_the_oom_killer_ends_a_load_that_needs_more_host_memory(tmp_path: Path) -> None:
    host = _host(tmp_path, "[engine.load]\nhost_ram_gib = 200.0\n")  # the host has 128 GiB
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    _wait_exit(host, identity)
    assert host.status(*identity).exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL)
    text = (tmp_path / "engine.log").read_text()
    assert "Loading safetensors checkpoint shards" in text and "Traceback" not in text
    assert f"Out of memory: Killed process {identity[0]}" not in text
    kernel = host.run(["dmesg"], timeout=30).stdout
    assert "invoked oom-killer" in kernel and "Out of memory: Killed process" in kernel


def test_a_crash_while_serving_comes_after_the_engine_served(tmp_path: Path) -> None:
    host = _host(
        tmp_path,
        '[[rules]]\nname = "scheduler watchdog"\noutcome = "crash"\nat = "serving"\nafter_seconds = 10000.0\n'
        "log = ['{prefix}Watchdog timeout (self.watchdog_timeout=300)']\n",
        time_scale=1000.0,
    )
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    wait_healthy(host.endpoint("127.0.0.1", 30000)[1], log=tmp_path / "engine.log")
    _wait_exit(host, identity)
    text = (tmp_path / "engine.log").read_text()
    assert text.index("The server is fired up and ready to roll!") < text.index("Watchdog timeout")


def test_a_fault_due_by_the_host_clock_strikes_a_running_engine(tmp_path: Path) -> None:
    host = _host(tmp_path, "[[host.faults]]\ngpu = 0\nxid = [48]\necc_uncorrected = 1\nat_host_seconds = 6000.0\n")
    assert host.probe_gpus().gpus[0].xid_errors == []
    identity = _start(host, tmp_path / "engine.log", "--port", "30000")
    _wait_exit(host, identity)
    assert "uncorrectable ECC error encountered" in (tmp_path / "engine.log").read_text()
    assert host.probe_gpus().gpus[0].xid_errors == ["Xid 48: Double Bit ECC Error (DBE)"]
