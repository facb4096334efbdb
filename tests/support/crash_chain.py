"""The kill-and-resume driver of the reliability suite: runs ``python -m agent`` as a child process,
SIGKILLs it at random points, answers and resumes, and after every cycle checks the invariants of
:mod:`support.reliability` on what is on disk and on the machine.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.state import ProjectState
from agent.store import read_state
from support.cli import REPO_ROOT, agent_environment, journal_records
from support.reliability import (
    EXIT_BLOCKED,
    EXIT_DONE,
    Identity,
    Snapshot,
    journal_disagreements,
    lost_since,
    untracked_engines,
)


@dataclass
class Cycle:
    command: list[str]
    killed: bool
    exit_code: int | None
    seconds: float
    started: bool  # the agent wrote its start record: it loaded the state and reconciled processes


class JournalFollower:
    """Counts journal records by kind as they are appended, reading only the new bytes each time."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.counts: dict[str, int] = {}
        self.last: dict[str, Any] = {}

    def poll(self) -> dict[str, int]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return self.counts
        whole = data[: data.rfind(b"\n") + 1]
        self.offset += len(whole)
        for line in whole.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and not entry.get("recovered"):
                for key in (str(entry.get("kind")), f"{entry.get('kind')}:{entry.get('tool')}"):
                    self.counts[key] = self.counts.get(key, 0) + 1
                self.last = entry
        return self.counts

    def site(self) -> str:
        """What the agent was doing, judged from the last journal record: where a kill lands."""
        kind = self.last.get("kind")
        if kind == "intent":
            return f"inside {self.last.get('tool')}"
        if kind == "result":
            return f"after {self.last.get('tool')}"
        return {
            "decision": "after a decision",
            "start": "starting or recovering",
            "answer": "after an answer",
            "event": "after an exit",
        }.get(str(kind), "before the start")


@dataclass
class CrashChain:
    """Start a run, SIGKILL it at a random moment, resume, kill again... until the run is done.

    Kill moments are drawn from ``rng`` (see :meth:`_watch`): they land in recovery, decisions, saves
    and inside tool calls, spread over the whole run. Budget questions (from ``--max-steps``) are
    answered with ``agent ask --answer`` or ``agent resume --answer``, chosen at random; those commands
    are killed too.
    """

    state_dir: Path
    log_dir: Path
    run_arguments: list[str]
    rng: random.Random
    kills_wanted: int
    delay_range: tuple[float, float] = (0.0, 1.0)
    kills_per_call: int = 3  # kills in a row inside one tool before it is let finish
    answer: str = "extend 4"
    cycle_timeout: float = 180.0
    cycles: list[Cycle] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    answers_given: dict[str, str] = field(default_factory=dict)
    sites: dict[str, int] = field(default_factory=dict)  # where the kills landed
    sites_in_order: list[str] = field(default_factory=list)
    kills: int = 0
    _stalled: int = 0  # kills in a row that let no call finish
    _untracked: set[Identity] = field(default_factory=set)  # engines spawned just before the last kill

    def _command(self) -> list[str]:
        latest = self.state_dir / "latest.json"
        if not latest.exists():
            return ["run", *self.run_arguments, "--state-dir", str(self.state_dir)]
        state = read_state(latest)
        if state.pending_questions():
            if self.rng.random() < 0.5:
                return ["ask", "--answer", self.answer, "--state-dir", str(self.state_dir)]
            return ["resume", str(latest), "--answer", self.answer]
        return ["resume", str(latest)]

    def cycle(self) -> Cycle:
        """One command, killed at a random moment unless it ends first; then check the invariants."""
        command = self._command()
        journal = JournalFollower(self.state_dir / "journal.jsonl")
        before = dict(journal.poll())
        killed, started = False, time.monotonic()
        with open(self.log_dir / f"cycle-{len(self.cycles):04d}.log", "w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "agent", *command],
                stdout=log,
                stderr=log,
                env=agent_environment(),
                cwd=REPO_ROOT,
            )
            try:
                killed = self._watch(process, command[0], journal, before)
            finally:
                if process.poll() is None:
                    process.kill()
                process.wait(timeout=30)
        counts = journal.poll()
        cycle = Cycle(
            command=command,
            killed=killed,
            exit_code=process.returncode,
            seconds=time.monotonic() - started,
            started=counts.get("start", 0) > before.get("start", 0),
        )
        self.cycles.append(cycle)
        progressed = counts.get("result", 0) > before.get("result", 0)
        self._stalled = self._stalled + 1 if killed and not progressed else 0
        self._check(cycle)
        return cycle

    def _watch(
        self, process: subprocess.Popen[bytes], name: str, journal: JournalFollower, before: dict[str, int]
    ) -> bool:
        """Wait for the process, killing it at the drawn moment; True when it was killed.

        The delay runs from the agent's ``start`` record (``ask``: from its launch), so kills land in
        recovery, decisions, saves and inside calls. After two kills in a row that let no call finish,
        the delay runs from the next finished call instead, and after ``kills_per_call`` kills in a row
        inside the same tool, from that tool's next result: the run always moves on, and the kills spread over all of
        it instead of piling up inside its longest calls.
        """
        may_kill = self.kills < self.kills_wanted
        trigger = "result" if self._stalled >= 2 else "start"
        recent = set(self.sites_in_order[-self.kills_per_call :])
        if len(self.sites_in_order) >= self.kills_per_call and len(recent) == 1 and min(recent).startswith("inside "):
            trigger = f"result:{min(recent).removeprefix('inside ')}"  # killed in it again and again: let it finish
            self.sites_in_order.append("let finish")
        delay = self.rng.uniform(*self.delay_range)
        started = time.monotonic()
        armed_at = started if name == "ask" else None
        while process.poll() is None:
            now = time.monotonic()
            if now - started > self.cycle_timeout:
                self.problems.append(f"{name} did not finish within {self.cycle_timeout} s")
                return False
            if may_kill and armed_at is None and journal.poll().get(trigger, 0) > before.get(trigger, 0):
                armed_at = now
            if armed_at is not None and may_kill and now - armed_at >= delay:
                journal.poll()
                process.send_signal(signal.SIGKILL)
                site = journal.site()
                self.sites[site] = self.sites.get(site, 0) + 1
                self.sites_in_order.append(site)
                self.kills += 1
                return True
            time.sleep(0.005)
        return False

    def _check(self, cycle: Cycle) -> None:
        where = f"after cycle {len(self.cycles)} ({' '.join(cycle.command[:1])}, killed={cycle.killed})"
        latest = self.state_dir / "latest.json"
        if not latest.exists():
            if journal_records(self.state_dir):
                self.problems.append(f"{where}: a journal but no latest.json")
            return
        try:
            state = read_state(latest)
        except ValueError as error:
            self.problems.append(f"{where}: latest.json is not loadable: {error}")
            return
        if cycle.command[0] == "ask" and cycle.exit_code == 0:
            self.answers_given.update({item.id: item.answer for item in state.questions if item.answer})
        snapshot = Snapshot.of(state, journal_records(self.state_dir))
        if self.snapshots:
            self.problems += [f"{where}: {problem}" for problem in lost_since(self.snapshots[-1], snapshot)]
        for question, answer in self.answers_given.items():
            if snapshot.answers.get(question) != answer:
                self.problems.append(f"{where}: the acknowledged answer to {question} is gone")
        self.snapshots.append(snapshot)
        self.problems += [
            f"{where}: {problem}" for problem in journal_disagreements(state, journal_records(self.state_dir))
        ]
        self._check_engines(state, cycle, where)
        if not cycle.killed and cycle.exit_code not in (EXIT_DONE, EXIT_BLOCKED):
            self.problems.append(f"{where}: exit code {cycle.exit_code}")

    def _check_engines(self, state: ProjectState, cycle: Cycle, where: str) -> None:
        """Every live engine is in the state. One spawned in the instant before a kill may be missing until
        the next resume adopts it; a resume that got as far as its start record must have done so."""
        untracked = untracked_engines(state, self.state_dir)
        if not cycle.started:  # killed before it reconciled, or a command that does not (ask)
            excused = set(untracked)
        elif cycle.killed:
            excused = set(untracked) - self._untracked
        else:
            excused = set()
        self.problems += [f"{where}: {why}" for key, why in untracked.items() if key not in excused]
        self._untracked = excused

    def run_to_done(self, max_cycles: int = 400) -> ProjectState:
        """Cycle until a command ends the run with exit 0 (``done``) and no more kills are wanted."""
        for _ in range(max_cycles):
            cycle = self.cycle()
            if self.problems:
                break
            if cycle.exit_code == EXIT_DONE and cycle.command[0] != "ask" and not cycle.killed:
                break
        return read_state(self.state_dir / "latest.json")


def call_journal_problems(records: list[dict[str, Any]]) -> list[str]:
    """After a finished run: every started call has exactly one result, and no call started twice."""
    intents = [entry["call_id"] for entry in records if entry.get("kind") == "intent"]
    results = [entry["call_id"] for entry in records if entry.get("kind") == "result"]
    problems = []
    if len(intents) != len(set(intents)):
        problems.append(f"calls started twice: {sorted({item for item in intents if intents.count(item) > 1})}")
    if len(results) != len(set(results)):
        problems.append(f"calls with two results: {sorted({item for item in results if results.count(item) > 1})}")
    missing = set(intents) - set(results)
    if missing:
        problems.append(f"calls without a result: {sorted(missing)}")
    return problems
