"""``agent tools`` lists the tools; ``agent tool NAME --args JSON`` runs one directly and prints the result.

A direct call works on the state directory like a run step does: the state document there (created if
missing) receives what the tool records, under the directory lock, so it never races a running agent.
Exit codes: 0 the tool succeeded, 1 the tool reported an error, 2 usage error, 3 the tool needs approval.
"""

from __future__ import annotations

import json
import shlex
from typing import Annotated, Any

import typer

from agent.cli.app import app
from agent.cli.common import (
    EXIT_BLOCKED,
    EXIT_DONE,
    EXIT_FAILED,
    ConfigOption,
    HostOption,
    JsonOption,
    SimOption,
    SshConfigOption,
    StateDirOption,
    finish,
    host_overrides,
    locate,
    print_json,
    progress,
    scenario_argument,
    usage_errors,
)
from agent.config import load_config
from agent.events import UsageError
from agent.wiring import check_scenario, tool_session
from tools.base import NeedsApproval
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


@app.command("tool")
def run_tool(
    name: Annotated[str, typer.Argument(help="Tool name (see `agent tools`).")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    state_dir: StateDirOption = None,
    sim: SimOption = None,
    host: HostOption = None,
    ssh_config: SshConfigOption = None,
    config: ConfigOption = None,
    engine_python: Annotated[
        str | None, typer.Option(help="Python of the engine environment (as `agent run --engine-python`).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Run one tool directly and print its result as JSON (a launch_engine dry run is shown as the command
    and the reasons for its version-dependent choices unless --json is given)."""
    with usage_errors():
        registry = default_registry()
        if registry.get(name) is None:
            raise UsageError(f"unknown tool {name!r}; valid tools: {', '.join(registry.names())}")
        arguments = _arguments(args)
        directory, _ = locate(None, state_dir)
        given = host_overrides(host, ssh_config)
        overrides = {**given, "tools": {"engine_python": engine_python}} if engine_python is not None else given
        settings = load_config(directory, config.absolute() if config is not None else None, overrides=overrides)
        check_scenario(scenario_argument(sim))
        with tool_session(
            directory,
            settings,
            goal=DIRECT_GOAL,
            sim=scenario_argument(sim),
            progress=progress,
            host_overrides=given,
        ) as session:
            try:
                result = session.execute(registry, name, arguments)
            except NeedsApproval as approval:
                print_json(
                    {
                        "tool": name,
                        "ok": False,
                        "needs_approval": approval.reason,
                        "evidence": approval.evidence,
                        "options": approval.options,
                    }
                )
                finish(EXIT_BLOCKED)
    output = result.output or {}
    if output.get("dry_run") and not json_output:
        print(describe_dry_run(output))
    else:
        print_json(result.model_dump(mode="json"))
    finish(EXIT_DONE if result.ok else EXIT_FAILED)


def describe_dry_run(output: dict[str, Any]) -> str:
    """A launch_engine dry run for people: environment and command as a shell line, then the reasons."""
    environment = " ".join(f"{name}={shlex.quote(value)}" for name, value in sorted(output["env"].items()))
    lines = [
        f"# {output.get('flags_from') or 'flags'}; entry point: {output.get('entry_point')}",
        " ".join(filter(None, [environment, shlex.join(output["argv"])])),
    ]
    lines += [f"# {choice['feature']}: {choice['decision']} ({choice['reason']})" for choice in output["choices"]]
    lines += [f"# note: {note}" for note in output.get("notes", [])]
    return "\n".join(lines)
