"""Property-based fuzzing of every tool's arguments (the loaders: test_reliability_fuzz_loaders.py).

Tools run through ``default_registry().execute`` on a simulated host, as the loop runs them. Arguments
are a valid call with one part replaced by hostile JSON (wrong types, huge and negative numbers, NUL
bytes, ``..``, paths outside the roots, unknown keys), raw text instead of JSON, or any JSON value at
all. The property: ``execute`` never raises (only ``shell`` may ask for approval), every failure is an
error result with a message, and an unexpected exception inside a tool is reported with its type and a
saved traceback. Fields that would reach beyond this machine or run for long (URLs, output directories,
interpreters, shell command text, long waits, big benchmarks) draw from safe sets; the shell guard gets
arbitrary command text directly instead. ``OPSLOOP_HEAVY=1`` multiplies the examples by twenty.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.reliability import heavy, kill_state_processes
from support.tool_context import wait_for

from agent.state import ProjectState
from agent.store import StateStore
from tools.base import NeedsApproval, ToolContext, ToolResult, ToolSettings
from tools.catalog import default_registry
from tools.hosts.sim.host import SimHost
from tools.processes import refresh
from tools.shell.guard import GuardContext, judge
from tools.shell.parse import ParseError

EXAMPLES = 400 if heavy() else 20
REGISTRY = default_registry()
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=8,
)
NON_STRINGS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.lists(SCALARS, max_size=3)
LOOPBACK_JUNK = [
    "",
    "127.0.0.1",
    "http://",
    "http://127.0.0.1:0",
    "http://127.0.0.1:9",
    "ftp://127.0.0.1:9",
    "http://[::1]:9",
    "http://127.0.0.1:99999",
    "http://127.0.0.1:9/v1?x=\x00",
    "127.0.0.1:9",
    "http://user:sk-ant-api03-AAAAAAAAAAAAAAAAAAAA@127.0.0.1:9",
]
UNSAFE_RUNS = ("engine_python", "specforge_python", "specforge_dir", "output_dir", "output_path", "cwd")  # never text
SHELL_COMMANDS = [
    "echo fuzz",
    "true",
    "false",
    "exit 3",
    "echo 'unterminated",
    "printf '%s' \"$HOME\"",
    "echo $HF_TOKEN",
    "cat /nonexistent",
    "rm -rf /",
    "rm -rf ~",
    "mkfs.ext4 /dev/sda",
    "kill -9 1",
    "dd if=/dev/zero of=/dev/sda",
    "echo a | tee /dev/sda",
    "nvidia-smi -r",
    "reboot",
    ":",
    "echo \x00",
    "sleep 0.01",
    "ls -la",
]


def path_values(base: Path) -> list[str]:
    return [
        "",
        ".",
        "..",
        "../..",
        "/",
        "/etc/passwd",
        "/dev/zero",
        "/proc/self/mem",
        "~",
        "x" * 300,
        "a\x00b",
        "a/../../b",
        "/nonexistent/dir/file",
        str(base / "target.txt"),
        str(base / "link-out"),
        str(base / "fifo"),
        str(base),
        str(base / "target.txt" / "below-a-file"),
        "line\nbreak",
        "*",
    ]


def bases(base: Path, model_path: str, specforge_python: str) -> dict[str, dict[str, Any]]:
    """One valid, cheap, local call per tool: the starting point of every mutation."""
    return {
        "update_state": {"tasks": [{"id": "t1", "title": "fuzz"}], "findings": [{"summary": "f"}]},
        "wait": {"seconds": 0.01, "reason": "fuzz"},
        "probe_system": {},
        "read_kernel_log": {"max_lines": 50},
        "launch_engine": {
            "config": {"engine": "sglang", "model_path": model_path, "port": 39_111},
            "name": "fuzz",
            "wait": False,
        },
        "stop_engine": {"name": "fuzz", "grace_seconds": 0},
        "engine_status": {"name": "fuzz"},
        "tail_log": {"path": str(base / "engine.log"), "lines": 5, "filter": "error", "regex": True},
        "diagnose_log": {"path": str(base / "engine.log")},
        "patch_file": {"path": str(base / "target.txt"), "search": "alpha", "replace": "beta", "reason": "fuzz"},
        "revert_patch": {"patch_id": "patch1"},
        "run_bench": {
            "base_url": "http://127.0.0.1:9",
            "model": "m",
            "concurrency": [1],
            "num_prompts": 2,
            "correctness_probe": False,
            "warmup_requests": 0,
            "timeout_seconds": 20,
        },
        "check_correctness": {"base_url": "http://127.0.0.1:9", "model": "m"},
        "check_lossless": {"base_url": "http://127.0.0.1:9", "model": "m", "reference": ["a", "b", "c", "d"]},
        "shell": {"command": "echo fuzz", "timeout_seconds": 5},
        "train_drafter": {
            "target_model_path": model_path,
            "stages": ["train"],
            "wait": False,
            "train_data_path": str(base / "train.jsonl"),
            "output_dir": str(base / "drafter"),
            "specforge_python": specforge_python,  # SpecForge's own environment
            "extra_config": {
                "deployment": {"disaggregated": {"managed_local": {"trainer_cuda_visible_devices": ["0"]}}}
            },
        },
        "drafter_status": {},
        "check_nodes": {"connect_timeout_seconds": 0.5},
        "render_deployment": {
            "target": "skypilot",
            "config": {"engine": "sglang", "model_path": model_path},
            "engine_version": "0.5.8",
            "accelerators": "H100:8",
            "output_path": str(base / "deploy.yaml"),
        },
        "launch_deployment": {"action": "status", "cluster": "fuzz"},
    }


def field_values(field: str, base: Path) -> st.SearchStrategy[Any]:
    """What a mutated field may become: anything, except where anything would leave the sandbox."""
    if field in ("base_url", "target_server"):
        return st.sampled_from(LOOPBACK_JUNK) | NON_STRINGS
    if field == "command":
        return st.sampled_from(SHELL_COMMANDS) | NON_STRINGS
    if field in UNSAFE_RUNS:
        return st.sampled_from(["", "a\x00b", str(base / "target.txt"), str(base / "drafter-fuzz")]) | NON_STRINGS
    if "path" in field or field in ("draft_model_config", "tokenizer", "name", "process"):
        return st.sampled_from(path_values(base)) | JSON_VALUES
    return JSON_VALUES


def cheap(tool: str, arguments: Any) -> bool:
    """False for valid calls that would take long (big benchmarks, long waits): not what is fuzzed here."""
    if not isinstance(arguments, dict):
        return True

    def number(key: str) -> float:
        value = arguments.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    if tool == "wait":
        return not 0.05 < number("seconds") <= 600
    if tool == "run_bench":
        levels = arguments.get("concurrency")
        many = isinstance(levels, list) and (
            len(levels) > 3 or any(isinstance(level, int) and level > 8 for level in levels)
        )
        return (
            not many
            and number("num_prompts") <= 8
            and number("warmup_requests") <= 2
            and not (0 < number("request_rate") < 5)
            and number("timeout_seconds") <= 60
        )
    if tool == "stop_engine":
        return number("grace_seconds") <= 1
    if tool in ("launch_engine", "train_drafter"):
        return arguments.get("wait") is False
    if tool == "shell":
        return number("timeout_seconds") <= 5 and arguments.get("command") != "sleep"
    return True


@st.composite
def hostile_arguments(draw: st.DrawFn, tool: str, base: Path, valid: dict[str, Any]) -> Any:
    how = draw(st.sampled_from(["replace", "replace", "replace", "nested", "drop", "unknown", "text", "any"]))
    arguments = copy.deepcopy(valid)
    if how in ("replace", "drop") and arguments:
        key = draw(st.sampled_from(sorted(arguments)))
        if how == "drop":
            del arguments[key]
        else:
            arguments[key] = draw(field_values(key, base))
    elif how == "replace":  # a tool without base arguments: set one of its schema's fields
        schema = REGISTRY.get(tool).args_model.model_json_schema()  # type: ignore[union-attr]
        key = draw(st.sampled_from(sorted(schema.get("properties") or {"x": None})))
        arguments[key] = draw(field_values(key, base))
    elif how == "nested":
        inner = [key for key, value in arguments.items() if isinstance(value, dict)]
        if inner:
            outer = draw(st.sampled_from(inner))
            key = draw(st.sampled_from([*sorted(arguments[outer]), "unknown_field"]))
            arguments[outer][key] = draw(field_values(key, base))
    elif how == "unknown":
        arguments[draw(st.text(min_size=1, max_size=12))] = draw(JSON_VALUES)
    elif how == "text":
        return draw(st.text(max_size=60) | st.sampled_from(["{", "[]", "null", '{"a": ', json.dumps(valid)[:-1]]))
    else:
        return draw(JSON_VALUES)
    if tool in ("launch_engine", "train_drafter") and isinstance(arguments, dict):
        arguments["wait"] = False  # a started engine or training returns at once (they are killed after)
    return arguments


INTERNAL_FAILURE = re.compile(
    r"^(?P<tool>\w+) failed: (?P<kind>[\w.]+): .*\(traceback in (?P<path>[^)]+)\)$", re.DOTALL
)
# Exceptions that carry an operating-system message (a file name too long, a NUL byte in a path, a file
# where a directory is expected): clear enough for a model to act on. Anything else is a finding.
EXPLAINED = {
    "OSError",
    "ValueError",
    "FileExistsError",
    "FileNotFoundError",
    "NotADirectoryError",
    "IsADirectoryError",
    "PermissionError",
    "UnicodeEncodeError",
}


def check_result(tool: str, result: ToolResult) -> str:
    """Check one result; returns its outcome: ok, error, or the type of an internal failure."""
    assert isinstance(result, ToolResult) and result.tool == tool
    if result.ok:
        assert isinstance(result.output, dict)
        return "ok"
    assert result.error and result.error.strip(), "a failure without a message"
    internal = INTERNAL_FAILURE.match(result.error)
    if internal is None:
        return "error"
    assert Path(internal["path"]).is_file(), "the traceback of an internal failure was not saved"
    assert internal["kind"] in EXPLAINED, f"{tool}: unexpected {internal['kind']}: {result.error[:300]}"
    return internal["kind"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ToolContext, Path]]:
    base = tmp_path_factory.mktemp("fuzz")
    state_dir = base / "state"
    store = StateStore(state_dir)
    state = ProjectState(goal="fuzz every tool")
    host = SimHost.from_scenario("h100-healthy", state_dir)
    (base / "target.txt").write_text("alpha\n", encoding="utf-8")
    (base / "engine.log").write_text("loading\nRuntimeError: CUDA error: out of memory\n", encoding="utf-8")
    (base / "train.jsonl").write_text('{"conversations": []}\n', encoding="utf-8")
    (base / "link-out").symlink_to("/etc/passwd")
    os.mkfifo(base / "fifo")
    context = ToolContext(
        state=state,
        state_dir=state_dir,
        host=host,
        settings=ToolSettings(
            engine_python=sys.executable,
            allowed_write_roots=[base],
            readable_log_dirs=[base],
            load_timeout_seconds=30,
            hang_after_seconds=5,
        ),
        checkpoint=lambda: store.save(state),
    )
    store.save(state)
    yield context, base
    store.save(state)
    kill_state_processes(state_dir)


@pytest.mark.parametrize("tool", REGISTRY.names())
def test_hostile_arguments_give_a_result_never_an_exception(tool: str, sandbox: tuple[ToolContext, Path]) -> None:
    context, base = sandbox
    host = context.host
    assert isinstance(host, SimHost)
    valid = bases(base, str(host.model_dir), str(host.layout.specforge_bin(host.scenario) / "python"))[tool]
    if tool == "shell":  # hostile commands run in the sandbox: give them a scratch root of their own
        (base / "scratch").mkdir(exist_ok=True)
        context = dataclasses.replace(
            context, settings=context.settings.model_copy(update={"allowed_write_roots": [base / "scratch"]})
        )
    outcomes: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(arguments=hostile_arguments(tool, base, valid))
    def run(arguments: Any) -> None:
        assume(cheap(tool, arguments))
        try:
            result = REGISTRY.execute(tool, arguments, context)
        except NeedsApproval as request:
            assert tool in ("shell", "tail_log", "diagnose_log", "patch_file") and request.reason and request.evidence
            outcomes["needs approval"] = outcomes.get("needs approval", 0) + 1
            return
        finally:
            if tool in ("launch_engine", "train_drafter"):
                context.checkpoint()
                kill_state_processes(context.state_dir)
        outcome = check_result(tool, result)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run()
    print(f"\n{tool}: {sum(outcomes.values())} calls, {dict(sorted(outcomes.items()))}")
    # The valid call itself still works after all that (once the jobs killed above are really gone: a SIGKILL
    # takes effect asynchronously, and a job of the same name still alive is refused).
    if tool not in ("stop_engine", "engine_status", "revert_patch", "drafter_status", "run_bench"):
        jobs = [record for record in context.state.processes if record.kind == "drafter_training"]
        assert wait_for(lambda: not any(refresh(record, context.host).alive for record in jobs), timeout=60)
        result = REGISTRY.execute(tool, valid, context)
        # The probes' valid calls ask a port nothing listens on, so a clear error result is what they give;
        # launch_deployment needs SkyPilot on the machine: without it, its valid call is a clear error.
        assert result.ok or tool in ("check_correctness", "check_lossless", "patch_file", "launch_deployment"), (
            result.error
        )
    kill_state_processes(context.state_dir)


@settings(max_examples=EXAMPLES * 10, deadline=None, database=None)
@given(
    command=st.text(max_size=80)
    | st.lists(
        st.sampled_from(
            [
                "rm",
                "-rf",
                "/",
                "~",
                "$HOME",
                "*",
                "&&",
                "|",
                ";",
                "$(pwd)",
                "`id`",
                "kill",
                "-9",
                "1",
                "xargs",
                "find",
                "-delete",
                "dd",
                "of=/dev/sda",
                ">",
                "/dev/sda",
                "mkfs",
                "'",
                '"',
                "\\",
                "cd",
                "..",
                "sudo",
            ]
        ),
        max_size=8,
    ).map(" ".join)
)
def test_the_shell_guard_judges_any_text_or_refuses_to_parse_it(command: str) -> None:
    context = GuardContext(
        home=Path.home(),
        state_dir=Path("/tmp/opsloop-fuzz-state"),
        cwd=Path("/tmp"),
        owned_pids=set(),
        match_processes=lambda pattern: None,
    )
    try:
        dangers = judge(command, context)
    except ParseError:
        return
    assert all(danger.reason for danger in dangers)
