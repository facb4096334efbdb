"""Helpers for the reliability suite: a watcher that counts the simulated engines alive at any moment,
and the invariants every saved state must keep (the kill-and-resume driver is :mod:`support.crash_chain`).

Nothing here reaches into the agent: it runs ``python -m agent`` as a child process, SIGKILLs it, and
judges only what is on disk (``latest.json``, ``journal.jsonl``) and what runs on the machine (psutil).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from agent.state import ProjectState
from support.cli import wait_for

EXIT_DONE, EXIT_BLOCKED = 0, 3
ENGINE_MODULE = "twin.engine"


def heavy() -> bool:
    """Heavier counts run only when asked: ``OPSLOOP_HEAVY=1``."""
    return os.environ.get("OPSLOOP_HEAVY") == "1"


# -- processes ------------------------------------------------------------------------------------------

Identity = tuple[int, float]  # (pid, create_time), as the state records a process


def engine_identities(state_dir: Path) -> dict[Identity, Identity | None]:
    """Live simulated engines of this state directory: engine -> its supervisor (the recorded process)."""
    marker = str(state_dir)
    found: dict[Identity, Identity | None] = {}
    for process in psutil.process_iter(["pid", "cmdline", "create_time", "status"]):
        info = process.info
        command = info.get("cmdline") or []
        if (
            len(command) < 3
            or command[1:3] != ["-m", ENGINE_MODULE]
            or info.get("status") == psutil.STATUS_ZOMBIE
            or not any(marker in part for part in command)
        ):
            continue
        try:
            parent = process.parent()
            supervisor = (parent.pid, parent.create_time()) if parent is not None else None
        except psutil.Error:
            supervisor = None
        found[(info["pid"], info["create_time"])] = supervisor
    return found


def same_process(recorded: Identity, seen: Identity | None) -> bool:
    return seen is not None and recorded[0] == seen[0] and abs(recorded[1] - seen[1]) < 1e-3


class EngineWatcher:
    """Samples the engines alive for one state directory; remembers the most alive at one moment."""

    def __init__(self, state_dir: Path, interval: float = 0.05) -> None:
        self.state_dir, self.interval = state_dir, interval
        self.most_alive = 0
        self.crowded: list[list[Identity]] = []  # samples with more than one engine alive
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="engine-watcher", daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            alive = engine_identities(self.state_dir)
            self.most_alive = max(self.most_alive, len(alive))
            if len(alive) > 1:
                self.crowded.append(sorted(alive))
            self._stop.wait(self.interval)

    def __enter__(self) -> EngineWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def kill_state_processes(state_dir: Path) -> None:
    """SIGKILL every process group this state directory's runs started (engines outlive the agent), and wait
    until each is gone: a signal is not a death, and on a busy machine the next call could still find the
    process alive (a drafter run "still running" under the same name)."""
    path = state_dir / "latest.json"
    records = json.loads(path.read_text(encoding="utf-8")).get("processes", []) if path.exists() else []
    identities = [(record["pid"], record["create_time"]) for record in records]
    identities += [supervisor for supervisor in engine_identities(state_dir).values() if supervisor]
    killed = []
    for pid, create_time in identities:
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - create_time) < 1e-3:
                os.killpg(pid, signal.SIGKILL)
                killed.append(process)
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    assert wait_for(lambda: all(_gone(process) for process in killed), timeout=60), "a killed process lived on"


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # dead; its parent has yet to collect it
    except psutil.NoSuchProcess:
        return True


# -- the state and the journal, as a human would read them -----------------------------------------------


@dataclass
class Snapshot:
    """What one look at the state directory showed, reduced to what must never go backwards."""

    step: int
    status: str
    findings: list[str]
    processes: list[tuple[str, int]]
    benchmarks: list[str]
    answers: dict[str, str]
    questions: list[str]

    @classmethod
    def of(cls, state: ProjectState, records: list[dict[str, Any]]) -> Snapshot:
        """The document together with what it moved to the journal (``history`` records; a copy repeated
        after a crash counts once)."""
        moved: dict[str, list[dict[str, Any]]] = {}
        for entry in records:
            if entry.get("kind") == "history":
                for name, items in entry.items():
                    if isinstance(items, list):
                        moved.setdefault(name, []).extend(items)
        document = state.model_dump(mode="json")

        def whole(name: str, key: Any) -> list[Any]:
            return list(dict.fromkeys([key(item) for item in [*moved.get(name, []), *document[name]]]))

        questions = [*moved.get("questions", []), *document["questions"]]
        return cls(
            step=state.step,
            status=state.status,
            findings=whole("findings", lambda item: (item.get("number"), item["summary"])),
            processes=whole("processes", lambda item: (item["name"], item["pid"])),
            benchmarks=whole("benchmarks", lambda item: item["id"]),
            answers={item["id"]: item["answer"] for item in questions if item.get("answer") is not None},
            questions=whole("questions", lambda item: item["id"]),
        )


def lost_since(before: Snapshot, after: Snapshot) -> list[str]:
    """What ``after`` no longer has of ``before``: committed work must only ever grow."""
    problems = []
    if after.step < before.step:
        problems.append(f"step went back from {before.step} to {after.step}")
    for name in ("findings", "processes", "benchmarks", "questions"):
        missing = [item for item in getattr(before, name) if item not in set(getattr(after, name))]
        if missing:
            problems.append(f"{name} lost or rewritten: {missing} -> {getattr(after, name)}")
    for question, answer in before.answers.items():
        if after.answers.get(question) != answer:
            problems.append(f"answer to {question} lost: {answer!r} -> {after.answers.get(question)!r}")
    return problems


def journal_disagreements(state: ProjectState, records: list[dict[str, Any]]) -> list[str]:
    """Where the journal claims something the state does not hold. The loop saves the state before it
    journals a result or an answer, so at every instant the journal must be covered by the state."""
    problems = []
    pending = state.loop.pending
    for entry in records:
        kind, step = entry.get("kind"), entry.get("step")
        if kind == "decision" and isinstance(step, int) and step > state.step:
            problems.append(f"journal has a decision for step {step}, the state is at step {state.step}")
        if kind == "result" and isinstance(step, int) and not entry.get("recovered"):
            in_pending = pending is not None and pending.step == step and entry.get("call_id") in pending.results
            if step > state.step or (step == state.step and not in_pending):
                problems.append(
                    f"journal has the result of {entry.get('call_id')} (step {step}) but the state "
                    f"does not (state step {state.step})"
                )
        if kind == "answer":
            answered = {item.id: item.answer for item in state.questions}
            if answered.get(str(entry.get("question_id"))) != entry.get("answer"):
                problems.append(
                    f"journal has answer {entry.get('answer')!r} to {entry.get('question_id')}, "
                    f"the state has {answered.get(str(entry.get('question_id')))!r}"
                )
    return problems


def untracked_engines(state: ProjectState, state_dir: Path) -> dict[Identity, str]:
    """Engines alive on the machine that the state does not record as live (supervisor -> why)."""
    live = [
        (record.pid, record.create_time)
        for record in state.processes
        if record.kind == "engine" and record.state not in ("exited", "stopped")
    ]
    recorded = [(record.pid, record.create_time) for record in state.processes]
    untracked: dict[Identity, str] = {}
    for engine, supervisor in engine_identities(state_dir).items():
        key = supervisor or engine
        if not any(same_process(identity, supervisor) for identity in recorded):
            untracked[key] = f"engine pid {engine[0]} (supervisor {supervisor}) is not in the state"
        elif not any(same_process(identity, supervisor) for identity in live):
            untracked[key] = f"engine pid {engine[0]} is alive but its record says it ended"
    return untracked
