"""Run a scenario file with an expected outcome (format 2, ``[expect]``) through the CLI and compare.

The run starts with ``agent run --sim FILE --policy runbook``; each expected question is checked (kind,
the words it mentions, whether an engine the agent started is still alive) and answered with
``agent ask --answer`` and ``agent resume``; then the end (status, launch settings, chosen configuration,
launches, report words, changes and tools the run must not make) is compared. The result is a list of
mismatches, empty when the run did what the file expects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from support.cli import run_agent
from support.runbook import load_state, runbook_progress
from twin.expect import Expectation, ExpectedQuestion
from twin.loader import load_scenario

RUN_TIMEOUT = 300.0


def _pending(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [question for question in state.get("questions", []) if question.get("answer") is None]


def _engine_alive(state: dict[str, Any]) -> bool:
    for record in state.get("processes", []):
        if record.get("kind") != "engine":
            continue
        try:
            process = psutil.Process(record["pid"])
            if abs(process.create_time() - record["create_time"]) < 1.0 and process.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def _question_text(question: dict[str, Any]) -> str:
    parts = [question.get("question", ""), question.get("hypothesis", ""), *question.get("evidence", [])]
    return "\n".join(str(part) for part in parts).lower()


def _check_question(state: dict[str, Any], expected: ExpectedQuestion, number: int) -> list[str]:
    pending = _pending(state)
    if state.get("status") != "blocked" or not pending:
        return [f"question {number}: expected a {expected.kind!r} question, the run ended {state.get('status')!r}"]
    question = pending[-1]
    problems = []
    if question.get("kind") != expected.kind:
        problems.append(f"question {number}: kind {question.get('kind')!r}, expected {expected.kind!r}")
    text = _question_text(question)
    missing = [word for word in expected.mentions if word.lower() not in text]
    problems += [f"question {number}: does not mention {word!r}" for word in missing]
    if expected.engine_alive is not None and _engine_alive(state) != expected.engine_alive:
        problems.append(f"question {number}: engine alive while asking is {not expected.engine_alive}")
    return problems


def _setting(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _final_text(state: dict[str, Any]) -> str:
    parts = [state.get("summary") or ""]
    parts += [finding.get("summary", "") for finding in state.get("findings", [])]
    parts += [_question_text(question) for question in _pending(state)]
    return "\n".join(parts).lower()


def _called(state_dir: Path) -> set[str]:
    journal = state_dir / "journal.jsonl"
    text = journal.read_text(encoding="utf-8") if journal.exists() else ""
    return {tool for tool in ("train_drafter", "launch_engine", "probe_system") if f'"tool": "{tool}"' in text}


def _check_end(state: dict[str, Any], expect: Expectation, state_dir: Path) -> list[str]:
    problems = []
    if state.get("status") != expect.status:
        asked = [_question_text(question)[:400] for question in _pending(state)]
        problems.append(f"status {state.get('status')!r}, expected {expect.status!r}; asked: {asked}")
    progress = runbook_progress(state) if state.get("loop", {}).get("policy_state", {}).get("runbook") else {}
    config = progress.get("base_config", {})
    for dotted, value in expect.config.items():
        if _setting(config, dotted) != value:
            problems.append(f"setting {dotted} is {_setting(config, dotted)!r}, expected {value!r}")
    problems += [f"setting {dotted} should be unset" for dotted in expect.unset if _setting(config, dotted) is not None]
    if expect.chosen is not None and progress.get("chosen") != expect.chosen:
        problems.append(f"chosen {progress.get('chosen')!r}, expected {expect.chosen!r}")
    launches = len(progress.get("attempts", []))
    if problems:  # the attempts say how the run got there
        problems += [f"attempt: {attempt}" for attempt in progress.get("attempts", [])]
    if expect.max_launches is not None and launches > expect.max_launches:
        problems.append(f"{launches} launches, expected at most {expect.max_launches}")
    text = _final_text(state)
    problems += [f"the end does not mention {word!r}" for word in expect.report if word.lower() not in text]
    changes = "\n".join(progress.get("changes", []))
    problems += [f"a change mentions {word!r}" for word in expect.never_changed if word in changes]
    called = _called(state_dir)
    problems += [f"{tool} was called" for tool in expect.never_called if tool in called]
    return problems


def run_expected(scenario_file: Path, state_dir: Path) -> list[str]:
    """Mismatches between what the agent did on this scenario and its ``[expect]`` table."""
    scenario, _ = load_scenario(str(scenario_file))
    expect = scenario.expect
    if expect is None:
        return [f"{scenario_file.name} has no [expect] table"]
    arguments = ("--goal", expect.goal, "--sim", scenario_file, "--state-dir", state_dir, "--policy", "runbook")
    run_agent("run", *arguments, timeout=RUN_TIMEOUT)
    for number, expected in enumerate(expect.questions, start=1):
        problems = _check_question(load_state(state_dir), expected, number)
        if any("the run ended" in problem for problem in problems):
            return problems
        run_agent("ask", "--answer", expected.answer, "--state-dir", state_dir)
        resumed = run_agent("resume", state_dir / "latest.json", timeout=RUN_TIMEOUT)
        if problems:
            return problems
        if resumed.returncode not in (0, 1, 3):
            return [f"resume after question {number} exited {resumed.returncode}: {resumed.stderr[-500:]}"]
    return _check_end(load_state(state_dir), expect, state_dir)
