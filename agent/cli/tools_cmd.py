"""``agent tools`` lists the tools; ``agent tool NAME --args JSON`` runs one directly and prints the result.

A direct call works on the state directory like a run step does: the state document there (created if
missing) receives what the tool records, under the directory lock, so it never races a running agent.
Exit codes: 0 the tool succeeded, 1 the tool reported an error, 2 usage error, 3 the tool needs approval.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.app import app
from agent.cli.common import (
    EXIT_BLOCKED,
    EXIT_DONE,
    EXIT_FAILED,
    ConfigOption,
    JsonOption,
    StateDirOption,
    finish,
    locate,
    print_json,
    progress,
    usage_errors,
)
from agent.config import load_config
from agent.events import UsageError
from agent.lock import StateDirectoryLock
from agent.state import ProjectState
from agent.store import StateStore
from agent.wiring import build_host, build_tool_settings
from tools.base import NeedsApproval, ToolContext
from tools.catalog import default_registry

DIRECT_GOAL = "direct tool calls"


@app.command("tools")
def list_tools(json_output: JsonOption = False) -> None:
    """List the tools with their descriptions (--json: with argument schemas)."""
    registry = default_registry()
    if json_output:
        print_json(registry.schemas())
        return
    for schema in registry.schemas():
        typer.echo(f"{schema['name']}\n    {schema['description']}")


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise UsageError(f"--args is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise UsageError("--args must be a JSON object")
    return value


def _load_or_create(store: StateStore, sim: str | None) -> ProjectState:
    if store.exists():
        state = store.load()
        if sim is not None and state.run.simulated_scenario not in (None, sim):
            raise UsageError(f"this state directory belongs to a run on scenario "
                             f"{state.run.simulated_scenario!r}, not {sim!r}")
    else:
        state = ProjectState(goal=DIRECT_GOAL)
        progress(f"no state in {store.state_dir}; creating one for direct tool calls")
    if sim is not None:
        state.run.simulated_scenario = sim
        state.environment.simulated_scenario = sim
    return state


@app.command("tool")
def run_tool(
    name: Annotated[str, typer.Argument(help="Tool name (see `agent tools`).")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    state_dir: StateDirOption = None,
    sim: Annotated[str | None, typer.Option("--sim", help="Simulated host: scenario name or file.")] = None,
    config: ConfigOption = None,
) -> None:
    """Run one tool directly and print its result as JSON."""
    with usage_errors():
        registry = default_registry()
        if registry.get(name) is None:
            raise UsageError(f"unknown tool {name!r}; valid tools: {', '.join(registry.names())}")
        arguments = _arguments(args)
        directory, _ = locate(None, state_dir)
        scenario = str(Path(sim).absolute()) if sim is not None and Path(sim).is_file() else sim
        directory.mkdir(parents=True, exist_ok=True)
        with StateDirectoryLock(directory):
            store = StateStore(directory)
            settings = load_config(directory, config.absolute() if config is not None else None)
            state = _load_or_create(store, scenario)
            context = ToolContext(state=state, state_dir=directory, host=build_host(state, directory),
                                  settings=build_tool_settings(settings), progress=progress,
                                  checkpoint=lambda: store.save(state))
            try:
                result = registry.execute(name, arguments, context)
            except NeedsApproval as approval:
                store.save(state)
                print_json({"tool": name, "ok": False, "needs_approval": approval.reason,
                            "evidence": approval.evidence, "options": approval.options})
                finish(EXIT_BLOCKED)
            store.journal.record("direct_tool", tool=name, ok=result.ok)
            store.save(state)
            store.close()
    print_json(result.model_dump(mode="json"))
    finish(EXIT_DONE if result.ok else EXIT_FAILED)
