"""The documents of diagnosis: what the caller knows (hints) and what the log says (the diagnosis)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.logs.hints import EngineHint
from tools.logs.library import DiagnosisClass
from tools.logs.phase import Phase

EngineGuess = Literal["sglang", "vllm", "unknown"]
Finding = Literal[
    "died_after_ready", "failed_after_ready", "exited_during_start_up", "ends_in_traceback", "requests_failed"
]
DecidedBy = Literal["rules", "model"]  # the structural rules and signatures, or the learned model


class Remedy(BaseModel):
    id: str
    text: str
    action: dict[str, Any] = Field(default_factory=dict)


class FrameInfo(BaseModel):
    file: str
    line: int | None = None
    function: str


class RootCause(BaseModel):
    """The first real error: its exception, the component its innermost frames are in, and the frames."""

    type: str | None = None  # "torch.OutOfMemoryError", "Fatal Python error", None for a cut traceback
    message: str = ""
    component: str | None = None  # cuda_graph, speculative, weight_loader, distributed, ...
    kind: Literal["exception", "truncated", "stack_dump", "crash"] = "exception"
    frames: list[FrameInfo] = Field(default_factory=list)  # innermost first, at most a few
    line_number: int | None = None
    origin: str | None = None  # the rank or process that printed it ("TP3", "EngineCore_DP0 pid=12")


class Alternative(BaseModel):
    """Another class the evidence points at, with why."""

    model_config = ConfigDict(serialize_by_alias=True, populate_by_name=True)

    diagnosis_class: DiagnosisClass = Field(alias="class")
    confidence: float
    why: str
    line_number: int | None = None


class Diagnosis(BaseModel):
    """JSON shape: {"class", "confidence", "line_number", "key_line", "remedies", "engine", "root_cause",
    "phase", "engine_hints", ...}. ``confidence`` is calibrated on the diagnosis corpus (see
    ``tools/logs/calibration.toml``); ``raw_confidence`` is the evidence's own score."""

    model_config = ConfigDict(serialize_by_alias=True, populate_by_name=True)

    diagnosis_class: DiagnosisClass = Field(alias="class")
    confidence: float
    line_number: int | None = None
    key_line: str | None = None
    remedies: list[Remedy] = Field(default_factory=list)
    engine: EngineGuess = "unknown"
    summary: str = ""
    signature: str | None = None
    evidence: list[str] = Field(default_factory=list)  # other telling lines, "LINE: text"
    lines_from_end: int | None = None
    progress: str | None = None  # the last loading stage seen
    log_path: str | None = None
    log_size_bytes: int = 0
    bytes_read: int = 0
    log_age_seconds: float | None = None
    raw_confidence: float = 0.0
    why: str = ""  # what decided the class
    root_cause: RootCause | None = None
    phase: Phase = "not_started"
    engine_hints: list[EngineHint] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)  # the next most likely classes
    findings: list[Finding] = Field(default_factory=list)
    decided_by: DecidedBy = "rules"  # "model" where no rule explained the error and the learned model did
    # After a death or failure that followed the ready line: the log lines around it ("LINE: text").
    lines_around: list[str] = Field(default_factory=list)
    exit_code: int | None = None  # how the process ended, as the caller or the supervisor's last line said


class DiagnosisHints(BaseModel):
    """What the caller knows beyond the log text."""

    engine: Literal["sglang", "vllm"] | None = None
    interconnect: str | None = None  # "pcie" moves NCCL_P2P_DISABLE first for NCCL classes
    exit_code: int | None = None
    process_alive: bool | None = None
    stale_after_seconds: float = 600.0
    seconds_since_output: float | None = None  # overrides the file's age when the caller knows better
    # The kernel's words about the engine's processes (e.g. the OOM killer's "Killed process N"), see
    # tools/logs/kernel.py; an OOM kill among them decides process_killed.
    kernel_lines: list[str] = Field(default_factory=list)
