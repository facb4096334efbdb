"""The README and the docs say what the code does: commands, options, environment variables, the
configuration example and the paths they point to are checked against the code itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup

from agent.cli import app
from agent.config import load_config
from agent.settings import ENVIRONMENT_VARIABLES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
COMMANDS = typer.main.get_command(app)


def _paragraph(text: str, start: str) -> str:
    begin = text.index(start)
    end = text.find("\n\n", begin)
    return text[begin : end if end != -1 else None]


def test_the_commands_table_lists_every_command() -> None:
    table = _paragraph(README, "| Command | What it does |")
    listed = set(re.findall(r"^\| `agent ([a-z]+)", table, re.MULTILINE))
    assert isinstance(COMMANDS, TyperGroup)
    assert listed == set(COMMANDS.commands)


def test_the_options_of_agent_run_exist() -> None:
    assert isinstance(COMMANDS, TyperGroup)
    paragraph = _paragraph(README, "`agent run` options:")
    mentioned = {flag for group in re.findall(r"`(--[^`]+)`", paragraph) for flag in re.findall(r"--[a-z-]+", group)}
    options = {name for parameter in COMMANDS.commands["run"].params for name in parameter.opts}
    assert mentioned and mentioned <= options


def test_the_environment_variables_are_those_of_the_configuration() -> None:
    paragraph = _paragraph(README, "Environment variables:")
    assert re.findall(r"`(OPSLOOP_[A-Z_]+)`", paragraph) == list(ENVIRONMENT_VARIABLES)


def test_the_agent_toml_example_is_a_valid_configuration(tmp_path: Path) -> None:
    example = re.search(r"Example `agent.toml`:\n\n```toml\n(.*?)```", README, re.DOTALL)
    assert example is not None
    (tmp_path / "agent.toml").write_text(example.group(1), encoding="utf-8")
    config = load_config(tmp_path, environ={})
    assert config.limits.max_steps == 400 and config.runbook is not None


@pytest.mark.parametrize("document", [ROOT / "README.md", *DOCS], ids=lambda path: path.name)
def test_the_paths_the_docs_name_exist(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    named = re.findall(r"`((?:agent|tools|twin|tests|benchmarks|docs|prompts|scripts)/[A-Za-z0-9_./-]*)`", text)
    placeholders = re.compile(r"\b[A-Z]{3,}\b")  # agent/cli/NAME.py
    missing = [path for path in named if not placeholders.search(path) and not (ROOT / path.rstrip("/")).exists()]
    assert missing == []
