"""read_kernel_log: GPU faults and OOM kills from the kernel log, on the simulated host and from real lines."""

from __future__ import annotations

from pathlib import Path

from support.sim import write_scenario
from support.tool_context import make_context

from tools.catalog import default_registry
from tools.hosts.sim.host import SimHost
from tools.kernel_log import parse_events

REGISTRY = default_registry()


def test_real_kernel_lines_become_typed_events() -> None:
    events = parse_events(
        [
            "[ 9131.415] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            "[ 9131.416] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
            "[ 9200.001] NVRM: Xid (PCI:0000:61:00): 13, pid=1234, name=python3, Graphics Exception",
            "[ 9300.002] NVRM: Xid (PCI:0000:61:00): 48, pid=1234, name=python3, DBE (double bit error)",
            "[ 9400.003] Out of memory: Killed process 4242 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
            "[ 9500.004] usb 1-1: new high-speed USB device",
        ]
    )
    assert [event.kind for event in events] == ["gpu_lost", "gpu_lost", "xid", "gpu_hardware", "oom_kill"]
    assert events[0].xid == 79 and events[0].pci == "0000:3b:00"
    assert (events[-1].pid, events[-1].process) == (4242, "python3")


def test_the_simulated_hosts_faults_reach_the_tool(tmp_path: Path) -> None:
    host = SimHost.from_scenario("gpu-fault", tmp_path / "state")
    result = REGISTRY.execute("read_kernel_log", {}, make_context(tmp_path, host=host))
    assert result.ok and result.output is not None
    assert result.output["readable"] and result.output["source"] == "dmesg"
    assert {event["xid"] for event in result.output["events"]} == {48, 63}
    assert "gpu hardware" in result.output["summary"]


def test_a_quiet_kernel_log_has_no_events(tmp_path: Path) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    result = REGISTRY.execute("read_kernel_log", {}, make_context(tmp_path, host=host))
    assert result.ok and result.output is not None and result.output["events"] == []
