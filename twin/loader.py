"""Find and load scenario files: built-in names or a path to a user's own TOML file.

Every problem becomes a :class:`ScenarioError` whose message names the file and the field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twin.engine.flags import known_flags
from twin.scenario import Scenario

BUILTIN_DIR = Path(__file__).resolve().parent / "scenarios"


class ScenarioError(ValueError):
    """A scenario that cannot be found, parsed or validated."""


def builtin_names() -> list[str]:
    return sorted(path.stem for path in BUILTIN_DIR.glob("*.toml"))


def resolve_scenario_path(name_or_path: str) -> Path:
    """A built-in scenario name, or a path to a TOML file."""
    builtin = BUILTIN_DIR / f"{name_or_path}.toml"
    if "/" not in name_or_path and "\\" not in name_or_path and builtin.is_file():
        return builtin
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path.resolve()
    raise ScenarioError(
        f"no scenario {name_or_path!r}: not a built-in name ({', '.join(builtin_names())}) and not a readable file"
    )


def _location(parts: tuple[int | str, ...]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def describe_validation_error(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        location = _location(tuple(part for part in item["loc"] if not str(part).startswith("function-")))
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{location}: {message}")
    return "; ".join(dict.fromkeys(lines))


def parse_scenario(data: dict[str, Any], source: str) -> Scenario:
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioError(f"invalid scenario {source}: {describe_validation_error(error)}") from None
    _check_rule_flags(scenario, source)
    return scenario


def _check_rule_flags(scenario: Scenario, source: str) -> None:
    entries = [("rules", index, rule.when) for index, rule in enumerate(scenario.rules)]
    entries += [("modifiers", index, modifier.when) for index, modifier in enumerate(scenario.modifiers)]
    for section, index, when in entries:
        engines = [when.engine] if when.engine else ["sglang", "vllm"]
        allowed = set().union(*(known_flags(engine) for engine in engines))
        for flag in when.flags:
            if flag not in allowed:
                raise ScenarioError(
                    f"invalid scenario {source}: {section}[{index}].when.flags: unknown "
                    f"{' or '.join(engines)} flag {flag!r} (use the flag's canonical long name)"
                )


def load_scenario(name_or_path: str) -> tuple[Scenario, Path]:
    """The validated scenario and the file it came from."""
    path = resolve_scenario_path(name_or_path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"scenario file {path} is not valid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"cannot read scenario file {path}: {error}") from None
    return parse_scenario(data, str(path)), path
