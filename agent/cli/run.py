"""``agent run``: start a new run on a goal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.app import app
from agent.cli.common import (
    ConfigOption,
    HostOption,
    JsonOption,
    MaxCostOption,
    MaxStepsOption,
    MaxWallOption,
    NotifyOption,
    SimOption,
    SshConfigOption,
    StateDirOption,
    finish,
    host_overrides,
    locate,
    progress,
    scenario_argument,
    usage_errors,
)
from agent.cli.session import prepare_agent, run_session
from agent.config import choose_policy, load_config
from agent.events import UsageError
from agent.lock import StateDirectoryLock
from agent.notify import Notifier
from agent.settings import AgentConfig
from agent.state import ProjectState, RunSettings
from agent.store import StateFileError, StateStore
from agent.wiring import build_policy, check_scenario

PolicyOption = Annotated[
    str | None,
    typer.Option("--policy", help="runbook | scripted | llm (default: llm when an API key is set, else runbook)."),
]
ScriptOption = Annotated[Path | None, typer.Option("--script", help="Decisions file for --policy scripted.")]
NewOption = Annotated[bool, typer.Option("--new", help="Archive an unfinished run here and start over.")]


def limit_overrides(
    max_steps: int | None, max_wall_seconds: float | None, max_cost_usd: float | None
) -> dict[str, Any]:
    given = {"max_steps": max_steps, "max_wall_seconds": max_wall_seconds, "max_cost_usd": max_cost_usd}
    return {key: value for key, value in given.items() if value is not None}


def _overrides(
    policy: str | None,
    script: Path | None,
    sim: str | None,
    engine_python: str | None,
    limits: dict[str, Any],
    llm: dict[str, Any],
) -> dict[str, Any]:
    """The command-line layer of the configuration (only what was given; paths made absolute)."""
    overrides: dict[str, Any] = {"limits": limits} if limits else {}
    if policy is not None:
        overrides["policy"] = policy
    if script is not None:
        overrides["script"] = str(script.absolute())
    if sim is not None:
        overrides["sim"] = scenario_argument(sim)
    if engine_python is not None:
        overrides["tools"] = {"engine_python": engine_python}
    if llm:
        overrides["llm"] = llm
    return overrides


def _make_room(store: StateStore, new: bool) -> None:
    """Refuse to start over an unfinished or unreadable run unless ``--new`` (which archives it)."""
    if not store.has_run():
        return
    label = "unreadable"
    try:
        existing = store.load()
        label = existing.run_id
        if existing.status in ("running", "blocked") and not new:
            raise UsageError(
                f"{store.state_dir} holds unfinished run {existing.run_id} ({existing.status} "
                f"at step {existing.step}, goal {existing.goal!r}); continue it with "
                f"`agent resume {store.latest_path}`, or pass --new to archive it and start "
                "over"
            )
    except StateFileError as error:
        if not new:
            raise UsageError(f"{error}. Pass --new to move it into the archive and start over") from None
    archived = store.archive(label)
    progress(f"the previous run's files were moved to {archived}")


def check_goal(goal: str) -> str:
    """The goal as one non-empty line (it heads the hand-over note and every notification)."""
    text = goal.strip()
    if not text:
        raise UsageError("the goal is empty; say what to achieve, e.g. --goal 'serve kimi with eagle3'")
    if any(not character.isprintable() for character in text):
        raise UsageError("the goal must be one line of text (no line breaks or control characters)")
    return text


def _check_run(settings: AgentConfig, notify: list[str]) -> None:
    """Everything that can be a usage error, checked before the state directory is touched."""
    Notifier([*settings.notify.channels, *notify], settings.notify, Path("."))
    check_scenario(settings.sim)
    build_policy(choose_policy(settings), settings, progress, simulated=settings.sim is not None)


@app.command()
def run(
    goal: Annotated[str, typer.Option("--goal", "-g", help="What to achieve, in words.")],
    state_dir: StateDirOption = None,
    policy: PolicyOption = None,
    script: ScriptOption = None,
    sim: SimOption = None,
    host: HostOption = None,
    ssh_config: SshConfigOption = None,
    engine_python: Annotated[str | None, typer.Option(help="Python of the engine environment.")] = None,
    notify: NotifyOption = None,
    config: ConfigOption = None,
    max_steps: MaxStepsOption = None,
    max_wall_seconds: MaxWallOption = None,
    max_cost_usd: MaxCostOption = None,
    provider: Annotated[str | None, typer.Option(help="LLM provider: anthropic | openai.")] = None,
    model: Annotated[str | None, typer.Option(help="LLM model name.")] = None,
    llm_base_url: Annotated[
        str | None, typer.Option("--llm-base-url", help="Server URL of the LLM (e.g. an OpenAI-compatible one).")
    ] = None,
    wire: Annotated[
        str | None,
        typer.Option(help="OpenAI API: auto | chat | responses (auto: Responses for the OpenAI models that need it)."),
    ] = None,
    thinking: Annotated[
        str | None,
        typer.Option(
            help="auto | adaptive | enabled | between_tools | disabled (Anthropic); on | off (compatible servers)."
        ),
    ] = None,
    effort: Annotated[
        str | None, typer.Option(help="Reasoning effort: none | minimal | low | medium | high | xhigh | max.")
    ] = None,
    new: NewOption = False,
    json_output: JsonOption = False,
) -> None:
    """Start a new run on GOAL and keep going until it is done or a human is needed."""
    with usage_errors():
        goal = check_goal(goal)
        directory, _ = locate(None, state_dir)
        given = (
            ("provider", provider),
            ("model", model),
            ("base_url", llm_base_url),
            ("wire", wire),
            ("thinking", thinking),
            ("effort", effort),
        )
        llm = {key: value for key, value in given if value is not None}
        overrides = _overrides(
            policy, script, sim, engine_python, limit_overrides(max_steps, max_wall_seconds, max_cost_usd), llm
        )
        overrides.update(host_overrides(host, ssh_config))
        config_file = config.absolute() if config is not None else None
        settings = load_config(directory, config_file, overrides=overrides)
        _check_run(settings, list(notify or []))
        with StateDirectoryLock(directory):
            store = StateStore(directory)
            state = ProjectState(
                goal=goal,
                run=RunSettings(
                    policy=choose_policy(settings),
                    simulated_scenario=settings.sim,
                    config_file=str(config_file) if config_file else None,
                    config_overrides=overrides,
                    notify=list(notify or []),
                ),
            )
            state.limits = settings.limits.model_copy()
            agent = prepare_agent(store, state, settings, resumed=False, notify=list(notify or []))
            _make_room(store, new)
            store.keep_secrets(list(notify or []), overrides)
            code = run_session(agent, resumed=False, json_output=json_output)
    finish(code)
