"""``agent config show``: the effective settings and where each came from (default, file, environment, flag).

For a state directory that holds a run, the flags are those the run was started with (``agent resume``
uses them again), and its config file unless ``--config`` names another. Secrets are masked.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agent.cli.app import app
from agent.cli.common import ConfigOption, JsonOption, StateDirOption, locate, print_json, print_text, usage_errors
from agent.config import Source, describe_sources, read_layers, validate
from agent.store import StateFileError, StateStore

config_app = typer.Typer(
    help="The configuration: defaults < file < OPSLOOP_* environment < flags.", no_args_is_help=True
)
app.add_typer(config_app, name="config")


def _run_layer(state_dir: Path, config_file: Path | None) -> tuple[Path | None, dict[str, object]]:
    """The config file and the command-line layer of the run in ``state_dir``, if it holds a readable one."""
    store = StateStore(state_dir)
    if not store.exists():
        return config_file, {}
    try:
        run = store.load().run
    except StateFileError:
        return config_file, {}
    recorded = Path(run.config_file) if run.config_file else None
    return config_file or recorded, dict(run.config_overrides)


def render(sources: list[Source]) -> str:
    width = max(len(source.key) for source in sources)
    lines = []
    for source in sources:
        where = f"{source.kind}: {source.detail}" if source.detail else source.kind
        lines.append(f"{source.key:<{width}} = {json.dumps(source.value, ensure_ascii=False)}  ({where})")
    return "\n".join(lines) + "\n"


@config_app.command("show")
def show(state_dir: StateDirOption = None, config: ConfigOption = None, json_output: JsonOption = False) -> None:
    """Print every effective setting with its source: default, file, environment (the variable) or flag."""
    with usage_errors():
        directory, _ = locate(None, state_dir)
        config_file, overrides = _run_layer(directory, config.absolute() if config is not None else None)
        layers = read_layers(directory, config_file, overrides=overrides)
        sources = describe_sources(validate(layers), layers)
    if json_output:
        print_json(
            {
                "config_file": next(
                    (layer.name.removeprefix("config file ") for layer in layers if layer.kind == "file"), None
                ),
                "settings": [
                    {
                        "setting": source.key,
                        "value": source.value,
                        "source": source.kind,
                        "detail": source.detail or None,
                    }
                    for source in sources
                ],
            }
        )
    else:
        print_text(render(sources))
