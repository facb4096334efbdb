"""LocalHost against real processes: group kill on timeout, output cap, supervised spawn, identity checks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from support.tool_context import fake, wait_for

from tools.hosts.local import LocalHost
from tools.hosts.nvml import NO_GPU_PREFIX


def test_run_captures_output_and_exit_code(tmp_path: Path) -> None:
    result = LocalHost(exit_dir=tmp_path).run(
        [sys.executable, "-c", "import os,sys; print(os.environ['PROBE']); sys.exit(4)"],
        timeout=10,
        env={"PROBE": "value-from-env"},
    )
    assert result.exit_code == 4
    assert result.stdout.strip() == "value-from-env"
    assert not result.timed_out


def test_run_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    script = (
        "import subprocess, time; child = subprocess.Popen(['sleep', '60']);"
        " print(child.pid, flush=True); time.sleep(60)"
    )
    result = LocalHost(exit_dir=tmp_path).run([sys.executable, "-c", script], timeout=10.0)
    assert result.timed_out and result.exit_code is None
    grandchild = int(result.stdout.split()[0])
    assert wait_for(
        lambda: not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE,
        timeout=5,
    )


def test_run_caps_output_with_a_visible_marker(tmp_path: Path) -> None:
    result = LocalHost(exit_dir=tmp_path).run(
        [sys.executable, "-c", "print('A' * 5000 + 'END')"], timeout=10, output_cap_bytes=200
    )
    assert "bytes of output dropped" in result.stdout
    assert result.stdout.startswith("A") and result.stdout.rstrip().endswith("END")
    assert len(result.stdout) < 400


def test_run_reports_a_missing_program(tmp_path: Path) -> None:
    result = LocalHost(exit_dir=tmp_path).run(["no-such-program-opsloop"], timeout=5)
    assert result.exit_code is None
    assert "could not start" in result.stderr


def test_spawned_exit_code_survives_an_agent_restart(tmp_path: Path) -> None:
    host = LocalHost(exit_dir=tmp_path / "exits")
    log = tmp_path / "logs" / "job.log"
    code = "import os, sys; print('marker', os.environ['JOB_FLAG']); sys.exit(7)"
    spawned = host.spawn([sys.executable, "-c", code], env={"JOB_FLAG": "on"}, log_path=log)
    assert os.getpgid(spawned.pid) == spawned.pid  # leads its own group
    assert wait_for(lambda: not host.status(spawned.pid, spawned.create_time).alive)
    restarted = LocalHost(exit_dir=tmp_path / "exits")  # a fresh agent process knows nothing but the record
    status = restarted.status(spawned.pid, spawned.create_time)
    assert not status.alive and status.exit_code == 7
    text = log.read_text()
    assert "marker on" in text and "exited with code 7" in text


def test_status_reports_tree_counters_while_alive(tmp_path: Path) -> None:
    host = LocalHost(exit_dir=tmp_path)
    spawned = host.spawn([sys.executable, fake("sleeper.py")], env={}, log_path=tmp_path / "s.log")
    try:
        assert wait_for(lambda: "sleeper started" in (tmp_path / "s.log").read_text())
        status = host.status(spawned.pid, spawned.create_time)
        assert status.alive and status.identity_matches
        assert status.rss_bytes and status.rss_bytes > 0
        assert status.cpu_seconds is not None
    finally:
        host.signal_group(spawned.pid, spawned.create_time, signal.SIGKILL)


def test_a_reused_pid_never_matches(tmp_path: Path) -> None:
    host = LocalHost(exit_dir=tmp_path)
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        real_create_time = psutil.Process(stranger.pid).create_time()
        recorded_earlier = real_create_time - 5.0  # "our" process once had this PID
        status = host.status(stranger.pid, recorded_earlier)
        assert not status.alive and not status.identity_matches
        assert host.signal_group(stranger.pid, recorded_earlier, signal.SIGKILL) is False
        time.sleep(0.2)
        assert stranger.poll() is None  # untouched
    finally:
        stranger.kill()
        stranger.wait()


def test_signal_group_reaches_child_and_records_signal_exit(tmp_path: Path) -> None:
    host = LocalHost(exit_dir=tmp_path)
    log = tmp_path / "t.log"
    spawned = host.spawn([sys.executable, fake("sleeper.py")], env={}, log_path=log)
    assert wait_for(lambda: "sleeper started" in log.read_text())
    assert host.signal_group(spawned.pid, spawned.create_time, signal.SIGTERM)
    assert wait_for(lambda: not host.status(spawned.pid, spawned.create_time).alive)
    assert host.status(spawned.pid, spawned.create_time).exit_code == -signal.SIGTERM
    assert "killed by SIGTERM" in log.read_text()


def test_probe_without_nvidia_driver_is_a_clear_result() -> None:
    probe = LocalHost().probe_gpus()
    if probe.error is None:  # a machine with a real driver
        assert probe.gpus and probe.driver_version
    else:
        assert probe.error.startswith(NO_GPU_PREFIX) and probe.gpus == []


def test_probe_without_the_nvml_binding(tmp_path: Path) -> None:
    # A separate interpreter in which the binding cannot be imported, as on a host without nvidia-ml-py.
    code = (
        "import sys; sys.modules['pynvml'] = None\n"
        "from tools.hosts.local import LocalHost\n"
        "host = LocalHost()\n"
        "print(host.probe_gpus().error); print(host.gpu_memory_used_mib())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
        check=True,
    )
    first, second = result.stdout.splitlines()
    assert first.startswith(NO_GPU_PREFIX) and "not installed" in first
    assert second == "None"


def _probe_with_stand_in_nvml(extra_env: dict[str, str]) -> dict[str, object]:
    # A child interpreter whose `pynvml` is tests/support/fakes/modules/pynvml.py: a 4-GPU box without a driver.
    root = Path(__file__).resolve().parents[1]
    code = (
        "from tools.hosts.local import LocalHost\n"
        "host = LocalHost()\n"
        "import json; print(json.dumps({'probe': host.probe_gpus().model_dump(mode='json'),"
        " 'memory': host.gpu_memory_used_mib()}))"
    )
    search_path = f"{root / 'tests' / 'support' / 'fakes' / 'modules'}{os.pathsep}{root}"
    environment = {**os.environ, "PYTHONPATH": search_path, **extra_env}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root, env=environment, check=True
    )
    value: dict[str, object] = json.loads(result.stdout)
    return value


def test_probe_reads_gpus_and_topology_through_nvml() -> None:
    result = _probe_with_stand_in_nvml({})
    probe = result["probe"]
    assert isinstance(probe, dict)
    assert probe["error"] is None and probe["interconnect"] == "nvlink"
    assert probe["driver_version"] == "570.133.20" and probe["cuda_version"] == "12.8"
    gpus = probe["gpus"]
    assert [gpu["compute_capability"] for gpu in gpus] == ["12.0"] * 4
    assert gpus[1]["memory_used_mib"] == 1500 and gpus[0]["memory_total_mib"] == 97_887
    assert gpus[2]["ecc_errors_uncorrected"] is None and gpus[0]["ecc_errors_uncorrected"] == 0
    links = {(link["gpu_a"], link["gpu_b"]): link for link in probe["topology"]}
    assert len(links) == 6
    assert links[(0, 1)]["link"] == "NV4" and links[(0, 1)]["p2p_supported"] is True
    assert links[(2, 3)]["link"] == "PHB" and links[(2, 3)]["p2p_supported"] is False
    assert links[(0, 2)]["link"] == "SYS"
    assert result["memory"] == [500, 1500, 2500, 3500]


def test_probe_reports_a_driver_that_fails_to_initialise() -> None:
    result = _probe_with_stand_in_nvml({"FAKE_NVML_FAIL": "1"})
    probe = result["probe"]
    assert isinstance(probe, dict)
    assert probe["error"] == f"{NO_GPU_PREFIX}: Driver Not Loaded" and probe["gpus"] == []
    assert result["memory"] is None
