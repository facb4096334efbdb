"""`agent tools`, `agent tool NAME --args JSON` and `agent diagnose LOGFILE`, run as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_agent

LOGS = Path(__file__).resolve().parent / "data" / "logs"
OPS_TOOLS = {"probe_system", "launch_engine", "stop_engine", "engine_status", "tail_log", "diagnose_log"}


def test_tools_lists_names_and_schemas() -> None:
    listed = run_agent("tools", "--json")
    assert listed.returncode == 0, listed.stderr
    schemas = {schema["name"]: schema for schema in json.loads(listed.stdout)}
    assert schemas.keys() >= OPS_TOOLS
    launch = schemas["launch_engine"]["input_schema"]
    assert "config" in launch["properties"] and launch["additionalProperties"] is False
    plain = run_agent("tools")
    assert plain.returncode == 0 and "diagnose_log" in plain.stdout


def test_probe_system_records_the_environment_in_the_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    result = run_agent("tool", "probe_system", "--state-dir", state_dir, timeout=120)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["ok"] and output["output"]["environment"]["cpu_cores"] >= 1
    if not output["output"]["environment"]["gpus"]:
        assert output["output"]["environment"]["gpu_probe_error"].startswith("no NVIDIA driver/GPU found")
    saved = json.loads((state_dir / "latest.json").read_text())
    assert saved["environment"]["probed_at"] is not None
    assert saved["environment"]["engine_python"]


def test_diagnose_log_tool_keeps_the_key_line(tmp_path: Path) -> None:
    arguments = json.dumps({"path": str(LOGS / "sglang-sm120-no-kernel.log")})
    (tmp_path / "state").mkdir()
    outside = run_agent("tool", "diagnose_log", "--args", arguments, "--state-dir", tmp_path / "state")
    assert outside.returncode == 3 and "needs approval" in json.loads(outside.stdout)["needs_approval"]
    (tmp_path / "state" / "agent.toml").write_text(f'[tools]\nreadable_log_dirs = ["{LOGS}"]\n')
    result = run_agent("tool", "diagnose_log", "--args", arguments, "--state-dir", tmp_path / "state")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["output"]
    assert output["class"] == "unsupported_arch"
    assert "no kernel image is available" in output["key_line"]


def test_tool_errors_and_usage_errors_have_distinct_exit_codes(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    unknown = run_agent("tool", "no_such_tool", "--state-dir", state_dir)
    assert unknown.returncode == 2 and "valid tools" in unknown.stderr
    malformed = run_agent("tool", "tail_log", "--args", '{"lines":', "--state-dir", state_dir)
    assert malformed.returncode == 2 and "not valid JSON" in malformed.stderr
    invalid = run_agent("tool", "tail_log", "--args", '{"lines": 0}', "--state-dir", state_dir)
    assert invalid.returncode == 1
    assert "lines" in json.loads(invalid.stdout)["error"]


def test_diagnose_command_prints_class_line_and_remedies(tmp_path: Path) -> None:
    human = run_agent("diagnose", LOGS / "sglang-kv-oom.log")
    assert human.returncode == 0, human.stderr
    assert human.stdout.startswith("cuda_oom (confidence")
    assert "line 7: RuntimeError: Not enough memory" in human.stdout
    assert '{"adjust_flag": {"mem_fraction": 0.03}}' in human.stdout
    as_json = run_agent("diagnose", LOGS / "vllm-xid79.log", "--json")
    payload = json.loads(as_json.stdout)
    assert payload["class"] == "gpu_hardware_fault" and payload["line_number"] == 3
    assert "fallen off the bus" in payload["key_line"]
    missing = run_agent("diagnose", tmp_path / "absent.log")
    assert missing.returncode == 2 and "is not a file" in missing.stderr
