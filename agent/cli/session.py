"""One working session on a state directory, shared by ``agent run`` and ``agent resume``:
build the agent, run the loop, notify, print the report, and choose the exit code."""

from __future__ import annotations

import signal
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

import typer

from agent.cli.common import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, print_json, print_text, progress
from agent.escalation import answer_command, resume_command
from agent.host_set import build_hosts
from agent.loop import Agent, ExitEvent
from agent.notify import Notifier
from agent.render import render_report
from agent.settings import AgentConfig
from agent.state import ProjectState, Question
from agent.store import StateStore, StateWriteError
from agent.wiring import build_agent, describe_environment, reconcile
from tools.document import utc_now
from tools.private_files import private_directory, write_private
from tools.redact import redact_text


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: the state is saved and the run can be resumed."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def prepare_agent(
    store: StateStore, state: ProjectState, config: AgentConfig, *, resumed: bool, notify: list[str]
) -> Agent:
    """Build everything the run needs; ``notify``: the command-line targets as given (the state holds them
    masked). Usage errors (bad notify spec, unknown scenario, missing policy) surface here, before anything
    is written."""
    channels = [*config.notify.channels, *notify]
    notifier = Notifier(channels, config.notify, store.state_dir, progress)
    hosts = build_hosts(state, store.state_dir, config)
    if resumed:
        reconcile(state, hosts, progress)

    def on_exit(event: ExitEvent, question: Question | None) -> None:
        notifier.notify(event, state, question)

    return build_agent(state, store, config, progress, on_exit, hosts=hosts)


def run_session(agent: Agent, *, resumed: bool, json_output: bool) -> int:
    """Run the loop to its next stop and return the exit code (the state is saved first)."""
    store, state = agent.store, agent.state
    try:
        store.save(state)
    except StateWriteError as error:
        typer.echo(f"agent: error: {error}", err=True)
        return EXIT_FAILED
    store.journal.record(
        "start",
        run_id=state.run_id,
        goal=state.goal,
        policy=state.run.policy,
        resumed=resumed,
        simulated_scenario=state.run.simulated_scenario,
        step=state.step,
        **describe_environment(),
    )
    progress(
        f"{'resuming' if resumed else 'starting'} run {state.run_id} at step {state.step} "
        f"with the {state.run.policy} policy; state in {store.state_dir}"
    )
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        event = agent.run()
    except KeyboardInterrupt:
        typer.echo(
            f"agent: interrupted at step {state.step}; the state is saved. "
            f"Continue with: {resume_command(store.state_dir)}",
            err=True,
        )
        return EXIT_INTERRUPTED
    except StateWriteError as error:
        typer.echo(
            f"agent: error: {error}. Free space or fix permissions, then: {resume_command(store.state_dir)}", err=True
        )
        return EXIT_FAILED
    except Exception as error:
        crash_log = write_crash_log(store.state_dir, error)
        typer.echo(
            f"agent: unexpected failure: {redact_text(f'{type(error).__name__}: {error}')} "
            f"(state saved; traceback in {crash_log})",
            err=True,
        )
        return EXIT_FAILED
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        store.close()
    code = EXIT_CODES[event]
    if json_output:
        print_json(outcome(state, store.state_dir, event, code))
    else:
        print_text(render_report(state, store.state_dir))
    return code


def outcome(state: ProjectState, state_dir: Path, event: str, code: int) -> dict[str, Any]:
    """The machine-readable result of ``agent run`` / ``agent resume``."""
    pending = state.pending_questions()
    return {
        "event": event,
        "exit_code": code,
        "status": state.status,
        "run_id": state.run_id,
        "goal": state.goal,
        "step": state.step,
        "summary": state.summary,
        "state_file": str(state_dir / "latest.json"),
        "questions": [question.model_dump(mode="json") for question in pending],
        "answer_command": answer_command(state_dir) if pending else None,
        "resume_command": resume_command(state_dir) if state.status != "done" else None,
        "usage": state.usage.model_dump(mode="json"),
    }


def write_crash_log(state_dir: Path, error: BaseException) -> str:
    """Where the (redacted) traceback went, or why it could not be written."""
    path = state_dir / "logs" / f"crash-{utc_now().replace(':', '')}.txt"
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        private_directory(path.parent)
        write_private(path, redact_text(text).encode("utf-8"))
    except OSError as write_error:
        return f"nowhere: {write_error.strerror or write_error}"
    return str(path)
