"""Naming remote hosts (``--host``, ``[[hosts]]``, ``OPSLOOP_HOSTS``), what OpenSSH resolves for them from ``$HOME``,
NCCL's own interface choice, and GPU facts read from nvidia-smi's output (the twin's nvidia-smi prints the
driver's formats)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.config import load_config
from agent.events import UsageError
from tools.cluster.nccl import socket_interface
from tools.hosts.base import NetworkInterface
from tools.hosts.sim.host import SimHost
from tools.hosts.ssh import gpus
from tools.hosts.ssh.target import SshTarget, resolve


@pytest.mark.parametrize(
    ("spec", "host", "user", "port"),
    [
        ("ssh://gpu-a", "gpu-a", None, None),
        ("ssh://me@10.0.0.7:2222", "10.0.0.7", "me", 2222),
        ("ssh://root@[fd00::7]:22/", "fd00::7", "root", 22),
        ("gpu-a", "gpu-a", None, None),
        ("me@gpu-a", "gpu-a", "me", None),
    ],
)
def test_host_specs(spec: str, host: str, user: str | None, port: int | None) -> None:
    target = SshTarget.parse(spec)
    assert (target.host, target.user, target.port) == (host, user, port)


@pytest.mark.parametrize("spec", ["ssh://", "http://gpu-a", "gpu a", "ssh://me@gpu-a:port"])
def test_bad_host_specs_say_what_is_accepted(spec: str) -> None:
    with pytest.raises(ValueError, match=r"ssh://\[user@\]host\[:port\]"):
        SshTarget.parse(spec)


def test_a_host_named_on_the_command_line_takes_its_agent_toml_settings(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text(
        '[[hosts]]\ntarget = "gpu-a"\npython = "/opt/py/bin/python3"\nworking_dir = "/data"\n'
        '[[hosts]]\ntarget = "gpu-b"\n[ssh]\nconnect_timeout_seconds = 3\n'
    )
    config = load_config(tmp_path, environ={}, overrides={"hosts": ["gpu-a", "ssh://me@gpu-c:2200"]})
    assert [(entry.target, entry.python, entry.working_dir) for entry in config.hosts] == [
        ("gpu-a", "/opt/py/bin/python3", "/data"),
        ("ssh://me@gpu-c:2200", "python3", None),
    ]
    assert config.ssh.connect_timeout_seconds == 3
    from_environment = load_config(tmp_path, environ={"OPSLOOP_HOSTS": "gpu-b, gpu-a"})
    assert [entry.target for entry in from_environment.hosts] == ["gpu-b", "gpu-a"]
    with pytest.raises(UsageError, match=r"hosts\.0\.target"):
        load_config(tmp_path, environ={}, overrides={"hosts": ["not a host"]})


def test_the_ssh_configuration_comes_from_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host gpu-a\n  HostName 10.1.2.3\n  User ops\n  Port 2222\n")
    (home / ".ssh" / "id_ed25519").write_text("not read here")
    script = (
        "import json; from tools.hosts.ssh.target import SshTarget, resolve; "
        "print(resolve(SshTarget.parse('gpu-a')).model_dump_json())"
    )
    completed = subprocess.run(
        [".venv/bin/python", "-c", script],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).resolve().parents[1],
        check=True,
    )
    resolved = completed.stdout.strip()
    assert '"hostname":"10.1.2.3"' in resolved and '"user":"ops"' in resolved and '"port":2222' in resolved
    assert f"UserKnownHostsFile={home}/.ssh/known_hosts" in resolved  # OpenSSH's default moved to $HOME
    assert f"IdentityFile={home}/.ssh/id_ed25519" in resolved
    explicit = resolve(SshTarget.parse("gpu-a"), home / ".ssh" / "config")
    assert (explicit.hostname, explicit.port) == ("10.1.2.3", 2222)


def test_nccl_picks_the_first_usable_interface_unless_told() -> None:
    found = [
        NetworkInterface(name="lo", addresses=["127.0.0.1/8"]),
        NetworkInterface(name="docker0", addresses=["172.17.0.1/16"]),
        NetworkInterface(name="eno1", up=True, addresses=["192.168.100.10/24"]),
        NetworkInterface(name="ens5", up=True, addresses=["10.0.0.1/24"]),
        NetworkInterface(name="ens50", up=True, addresses=["10.9.0.1/24"]),
    ]

    def chosen(value: str | None) -> str | None:
        picked = socket_interface(found, {} if value is None else {"NCCL_SOCKET_IFNAME": value})
        return picked.name if picked else None

    assert chosen(None) == "eno1"
    assert chosen("ens5") == "ens5"  # a prefix: ens5 comes first
    assert chosen("=ens50") == "ens50"
    assert chosen("^eno,lo,docker") == "ens5"
    assert chosen("ib") is None


def test_gpu_facts_from_nvidia_smi_output_match_the_host(tmp_path: Path) -> None:
    host = SimHost.from_scenario("kimi-sm120", tmp_path / "state")
    read = gpus.probe(lambda argv: host.run(argv, timeout=60))
    truth = host.probe_gpus()
    assert [(gpu.index, gpu.name, gpu.compute_capability, gpu.memory_total_mib) for gpu in read.gpus] == [
        (gpu.index, gpu.name, gpu.compute_capability, gpu.memory_total_mib) for gpu in truth.gpus
    ]
    assert (read.driver_version, read.cuda_version, read.interconnect) == (
        truth.driver_version,
        truth.cuda_version,
        truth.interconnect,
    )
    assert gpus.memory_used(lambda argv: host.run(argv, timeout=60)) == host.gpu_memory_used_mib()
