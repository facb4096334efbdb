"""The tool interface: typed arguments and results, a registry, and safe execution.

Every tool has a name, a description written for a model, a pydantic argument model and a pydantic
output model (so JSON schemas come for free). :func:`ToolRegistry.execute` is the only way tools are
run: it validates arguments, enforces the timeout, caps output, and turns every failure into an
error :class:`ToolResult` the policy can read. Only :class:`NeedsApproval` escapes, because asking a
human is a decision for the loop, not a tool failure. A tool that times out keeps running in its
thread and may still write to the state (see :meth:`ToolRegistry._run_with_timeout`).

Tools see the agent's state document only through :class:`ToolState` and record what they learn
there; they never import the agent.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.hosts.base import CallInterrupted, HostUnreachable
from tools.private_files import private_directory, write_private
from tools.records import BenchmarkRecord, Environment, ModelInfo, PatchRecord, ProcessRecord, Task, TaskStatus

if TYPE_CHECKING:
    from tools.hosts.base import Host

DEFAULT_OUTPUT_CAP_CHARS = 8_000


class ToolArgs(BaseModel):
    """Base for argument models: unknown keys are an error the model gets to see."""

    model_config = ConfigDict(extra="forbid")


class ToolOutput(BaseModel):
    """Base for result models."""

    model_config = ConfigDict(extra="allow")


class ToolError(Exception):
    """A failure with a message written for the model (what went wrong, what to do instead)."""


APPROVAL_WORD = "approve"


class NeedsApproval(Exception):
    """The tool refuses to act without a human's approval (a command outside the sandbox, a file outside the
    readable paths, ...). ``evidence[0]`` identifies what is approved; only an answer that is exactly
    :data:`APPROVAL_WORD` (or ``agent ask --approve``) approves it."""

    def __init__(self, reason: str, evidence: list[str] | None = None, options: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.evidence = list(evidence or [])
        self.options = list(options or [APPROVAL_WORD, "deny"])


class ToolResult(BaseModel):
    tool: str
    ok: bool
    output: dict[str, Any] | None = None
    error: str | None = None
    truncated: bool = False
    full_output_path: str | None = None
    duration_seconds: float = 0.0
    # The connection to a host dropped while the call ran there: its effect is unknown (as after a crash).
    interrupted: bool = False


class ToolSettings(BaseModel):
    """Operator settings the tools read: the ``[tools]`` section of the agent configuration. The wiring
    hands tools an effective copy (the working directory added to the write roots, waiting thresholds
    divided by the host's time scale)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    engine_python: str = Field(default_factory=lambda: sys.executable)
    """Interpreter of the engine environment: probes, launches, benchmarks and training use it.
    Default: the interpreter running the agent."""
    specforge_python: str | None = None
    """Interpreter of SpecForge's own environment (it pins torch and sglang, so it is usually not the engine's).
    Default: the one probe_system finds, ``$SPECFORGE_DIR/.venv/bin/python``."""
    allowed_write_roots: list[Path] = Field(default_factory=list)
    """Directories patch_file may write in (the working directory is always allowed)."""
    output_cap_chars: int = Field(default=DEFAULT_OUTPUT_CAP_CHARS, ge=200)
    """Longest string of a tool result shown to the policy; the full output goes to a file."""
    load_timeout_seconds: float = Field(default=1800.0, gt=0)
    """How long launch_engine waits for an engine to become ready (large MoE models load for 7-20 min)."""
    hang_after_seconds: float = Field(default=600.0, gt=0)
    """A starting engine with no sign of activity for this long is hung."""
    shell_sandbox: Literal["auto", "off"] = "auto"
    """``auto``: every shell command runs in the sandbox (bubblewrap) where this machine can run one, and
    where it cannot, only read-only diagnostics run without asking; ``off``: never use the sandbox."""
    shell_max_processes: int = Field(default=512, ge=8)
    """Processes a sandboxed shell command may have at once (a pids control group, where available)."""
    readable_log_dirs: list[Path] = Field(default_factory=list)
    """Directories of engine logs that tail_log and diagnose_log may read, besides the logs of the
    processes the agent started; other files need a human's approval."""
    protected_paths: list[Path] = Field(default_factory=list)
    """Paths no tool may change (read-only in the sandbox, refused by patch_file). The wiring adds the
    agent's own code."""
    hidden_paths: list[Path] = Field(default_factory=list)
    """Paths no tool may read or change (hidden in the sandbox, refused by patch_file), besides the state
    directory and the user's credentials. The wiring adds the agent's configuration file."""


class ToolState(Protocol):
    """The part of the agent's state document a tool may read and write, and nothing more.

    The agent's document (``agent.state.ProjectState``) implements it; tools never import the agent.
    Records are the tools' own types (:mod:`tools.records`), mutated in place: a tool appends the
    process it started, updates a record's state, replaces the probed environment.
    """

    @property
    def run_id(self) -> str: ...

    @property
    def step(self) -> int: ...

    environment: Environment
    model: ModelInfo
    processes: list[ProcessRecord]
    tasks: list[Task]
    patches: list[PatchRecord]
    benchmarks: list[BenchmarkRecord]
    next_steps: list[str]

    def add_finding(self, summary: str, evidence: list[str] | None = None, pinned: bool = False) -> object:
        """Record what was learned, at the current step, with its evidence; ``pinned`` keeps it in the
        hand-over for the whole run (unpinned findings give way to newer ones)."""

    def upsert_task(
        self, task_id: str, title: str | None = None, status: TaskStatus | None = None, notes: str | None = None
    ) -> Task:
        """Add the task, or change the given fields of the task with this id."""

    def next_id(self, prefix: str, existing: list[str]) -> str:
        """A new id such as ``patch3`` for a list of records with ``existing`` ids."""

    def take_approval(self, evidence_line: str, consume: bool = True) -> str | None:
        """The id of an explicitly approved question with this evidence line, or None. With ``consume`` the
        approval is single-use: an unused one is marked used; without, any approval counts (a path
        approved for reading stays approved)."""


@dataclass
class ToolContext:
    """What a running tool may touch. Tools record what they learn into ``state`` directly."""

    state: ToolState
    state_dir: Path
    host: Host
    settings: ToolSettings
    # Save the state document now; tools call it right after starting a process, so that a crash
    # before the end of the step cannot orphan the process.
    checkpoint: Callable[[], None] = lambda: None
    # Human-facing progress lines for long waits (printed by the CLI, never sent to the model).
    progress: Callable[[str], None] = lambda message: None
    # Every host of the run by name, in order; ``host`` is the first. Empty: ``host`` is the only one.
    hosts: dict[str, Host] = field(default_factory=dict)

    def all_hosts(self) -> list[Host]:
        """The run's hosts, the first (``host``) first."""
        return list(self.hosts.values()) or [self.host]

    def host_named(self, name: str | None) -> Host:
        """The host with this name (None or "": the first); ToolError naming the known hosts otherwise."""
        if not name or name == self.host.name:
            return self.host
        if name in self.hosts:
            return self.hosts[name]
        known = ", ".join(host.name for host in self.all_hosts())
        raise ToolError(f"no host named {name!r} in this run; its hosts: {known}")

    def host_of(self, record: ProcessRecord) -> Host:
        """The host a managed process runs on."""
        return self.host_named(record.host or None)

    @property
    def outputs_dir(self) -> Path:
        return private_directory(self.state_dir / "outputs")

    @property
    def logs_dir(self) -> Path:
        return private_directory(self.state_dir / "logs")

    def save_output(self, name: str, text: str) -> Path:
        """Write a full tool output under the state directory (readable by its owner only); return its path."""
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
        path = self.outputs_dir / f"step{self.state.step:05d}-{safe}"
        write_private(path, text.encode("utf-8"))
        return path


ArgsT = TypeVar("ArgsT", bound=ToolArgs)
OutputT = TypeVar("OutputT", bound=ToolOutput)


class Tool(ABC, Generic[ArgsT, OutputT]):
    name: ClassVar[str]
    description: ClassVar[str]
    args_model: type[ArgsT]
    output_model: type[OutputT]
    timeout_seconds: ClassVar[float] = 120.0
    # How long one call can block, in words, for the model (default: "at most <timeout_seconds> s").
    blocks: ClassVar[str] = ""

    @abstractmethod
    def run(self, args: ArgsT, context: ToolContext) -> OutputT:
        """Do the work. Raise ToolError for expected failures; any other exception is also caught."""

    def timeout_for(self, args: ArgsT) -> float:
        """The wall-clock limit for one call; tools with a per-call timeout argument override this."""
        return self.timeout_seconds

    def schema(self) -> dict[str, Any]:
        """Name, description (ending with how long a call can block) and the arguments' JSON schema."""
        blocks = self.blocks or f"at most {self.timeout_seconds:g} seconds."
        return {
            "name": self.name,
            "description": f"{self.description} Blocks: {blocks}",
            "input_schema": self.args_model.model_json_schema(),
        }


AnyTool = Tool[Any, Any]


def _cap(value: Any, cap: int, marker: str) -> tuple[Any, bool]:
    """Cut long strings inside a JSON-like value; return the capped value and whether anything was cut."""
    if isinstance(value, str) and len(value) > cap:
        return value[:cap] + f"\n[... truncated {len(value) - cap} characters; {marker}]", True
    if isinstance(value, dict):
        cut_any = False
        capped: dict[str, Any] = {}
        for key, item in value.items():
            capped[key], cut = _cap(item, cap, marker)
            cut_any = cut_any or cut
        return capped, cut_any
    if isinstance(value, list):
        items = []
        cut_any = False
        for item in value:
            capped_item, cut = _cap(item, cap, marker)
            items.append(capped_item)
            cut_any = cut_any or cut
        return items, cut_any
    return value, False


class ToolRegistry:
    def __init__(self, tools: Iterable[AnyTool]) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._schemas: list[dict[str, Any]] | None = None
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name}")
            self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def get(self, name: str) -> AnyTool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools' JSON schemas, built once (pydantic schema generation is slow and tools never change)."""
        if self._schemas is None:
            self._schemas = [self._tools[name].schema() for name in self.names()]
        return self._schemas

    def execute(self, name: str, raw_arguments: dict[str, Any] | str, context: ToolContext) -> ToolResult:
        """Run one tool call. Never raises, except NeedsApproval."""
        started = time.monotonic()
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                tool=name, ok=False, error=f"unknown tool {name!r}; valid tools: {', '.join(self.names())}"
            )
        arguments = raw_arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as error:
                return ToolResult(
                    tool=name,
                    ok=False,
                    error=f"arguments are not valid JSON ({error}); expected an object "
                    f"matching {json.dumps(tool.args_model.model_json_schema())}",
                )
        if not isinstance(arguments, dict):
            return ToolResult(tool=name, ok=False, error="arguments must be a JSON object")
        try:
            args = tool.args_model.model_validate(arguments)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}" for item in error.errors()
            )
            return ToolResult(tool=name, ok=False, error=f"invalid arguments for {name}: {problems}")
        try:
            output, error_text = self._run_with_timeout(tool, args, context)
        except CallInterrupted as error:
            return ToolResult(
                tool=name,
                ok=False,
                interrupted=True,
                duration_seconds=time.monotonic() - started,
                error=f"interrupted: {error}. The call may or may not have taken effect; verify its effect "
                "(status, logs, files) before repeating it.",
            )
        duration = time.monotonic() - started
        if error_text is not None:
            return ToolResult(tool=name, ok=False, error=error_text, duration_seconds=duration)
        assert output is not None
        dumped = output.model_dump(mode="json")
        marker = "full output saved"
        capped, truncated = _cap(dumped, context.settings.output_cap_chars, marker)
        full_path = None
        if truncated:
            full = context.save_output(f"{name}.json", json.dumps(dumped, indent=2))
            full_path = str(full)
            capped, _ = _cap(dumped, context.settings.output_cap_chars, f"full output in {full}")
        return ToolResult(
            tool=name,
            ok=True,
            output=capped,
            truncated=truncated,
            full_output_path=full_path,
            duration_seconds=duration,
        )

    @staticmethod
    def _run_with_timeout(tool: AnyTool, args: ToolArgs, context: ToolContext) -> tuple[ToolOutput | None, str | None]:
        """Run the tool in a daemon thread and wait at most ``tool.timeout_for(args)``.

        A thread cannot be stopped: on timeout the call is reported as timed out, but the tool's thread
        keeps running until it returns by itself (or the agent exits). Until then it may still write
        to ``context.state`` (append a process or a finding, change a record's state), call
        ``context.checkpoint()`` and write files under the state directory; its return value is
        dropped. The loop may save the state while it does. This is a backstop: every tool that waits
        keeps its own deadline (launch_engine, run_bench, wait, shell...), inside this limit, and a
        process it started is recorded before anything else, so nothing is orphaned."""
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["output"] = tool.run(args, context)
            except BaseException as error:  # reported to the policy, never lost
                outcome["error"] = error
                outcome["traceback"] = traceback.format_exc()

        limit = tool.timeout_for(args)
        worker = threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            return None, f"{tool.name} timed out after {limit:.0f} s"
        error = outcome.get("error")
        if isinstance(error, NeedsApproval | CallInterrupted):
            raise error
        if isinstance(error, HostUnreachable):
            if error.needs_human:
                raise NeedsApproval(str(error), evidence=error.evidence, options=error.options)
            return None, f"host unreachable: {error}"
        if isinstance(error, ToolError):
            return None, str(error)
        if isinstance(error, BaseException):
            saved = context.save_output(f"{tool.name}-traceback.txt", str(outcome.get("traceback", "")))
            return None, f"{tool.name} failed: {type(error).__name__}: {error} (traceback in {saved})"
        output = outcome.get("output")
        if not isinstance(output, ToolOutput):
            return None, f"{tool.name} returned no result"
        return output, None
