"""SpecForge run configuration: a YAML subset reader and the schema checks ``specforge train`` makes.

The reader handles what run configs use: nested mappings by indentation, scalars (numbers, booleans,
null, quoted or bare strings), ``[a, b]`` lists and ``- item`` lists, comments. A JSON file also works.
Unknown sections and fields are errors, as in SpecForge's unified runtime (0.2.0 ``config/schema.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from twin.specforge.fields import DATA_FIELDS, MODEL_FIELDS, TRAINING_FIELDS

SCHEMA: dict[str, frozenset[str] | None] = {
    "model": MODEL_FIELDS,
    "data": DATA_FIELDS,
    "training": TRAINING_FIELDS,
    "tracking": None,
    "profiling": None,
    "runtime": None,
    "deployment": None,  # free-form here
}
TOP_LEVEL = {"run_id", "output_dir", *SCHEMA}


class ConfigError(ValueError):
    pass


def _scalar(text: str) -> Any:
    text = text.strip()
    if not text:
        return None
    if text[0] == '"' and text[-1] == '"' and len(text) >= 2:
        try:
            return json.loads(text)  # double-quoted YAML strings use JSON's escapes
        except json.JSONDecodeError:
            return text[1:-1]
    if text[0] == "'" and text[-1] == "'" and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(item) for item in inner.split(",")] if inner else []
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("null", "~", "none"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""


def parse_yaml(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if stripped.startswith("{"):
        document = json.loads(stripped)
        if not isinstance(document, dict):
            raise ConfigError("the configuration must be a mapping")
        return document
    root: dict[str, Any] = {}
    stack: list[tuple[int, Any]] = [(-1, root)]
    pending: tuple[int, dict[str, Any], str] | None = None  # a key whose value is a nested block
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        content = line.strip()
        if pending is not None:
            parent_indent, parent, key = pending
            if indent <= parent_indent:
                parent[key] = None
            else:
                parent[key] = [] if content.startswith("- ") or content == "-" else {}
                stack.append((indent, parent[key]))
            pending = None
        while stack and indent < stack[-1][0]:
            stack.pop()
        container = stack[-1][1]
        if content.startswith("- ") or content == "-":
            if not isinstance(container, list):
                raise ConfigError(f"line {number}: a list item where a mapping key was expected")
            container.append(_scalar(content[1:]))
            continue
        key, colon, value = content.partition(":")
        if not colon or not isinstance(container, dict):
            raise ConfigError(f"line {number}: expected 'key: value', got {content!r}")
        if value.strip():
            container[key.strip().strip("\"'")] = _scalar(value)
        else:
            pending = (indent, container, key.strip().strip("\"'"))
    if pending is not None:
        pending[1][pending[2]] = None
    return root


def apply_override(config: dict[str, Any], override: str) -> None:
    """``section.field=value`` as on the ``specforge train`` command line."""
    path, equals, value = override.partition("=")
    if not equals or not path:
        raise ConfigError(f"bad override {override!r}: expected section.field=value")
    parts = path.split(".")
    node = config
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"bad override {override!r}: {part} is not a section")
        node = child
    node[parts[-1]] = _scalar(value)


def check_schema(config: dict[str, Any]) -> None:
    for key, value in config.items():
        if key not in TOP_LEVEL:
            raise ConfigError(f"unknown top-level field {key!r} (known: {', '.join(sorted(TOP_LEVEL))})")
        allowed = SCHEMA.get(key)
        if allowed is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"section {key!r} must be a mapping")
        for field in value:
            if field not in allowed:
                raise ConfigError(f"unknown field {field!r} in section {key!r} (known: {', '.join(sorted(allowed))})")
    model, data = config.get("model") or {}, config.get("data") or {}
    if not model.get("target_model_path"):
        raise ConfigError("model.target_model_path is required")
    sources = [name for name in ("train_data_path", "prompts_path", "hidden_states_path") if data.get(name)]
    if len(sources) != 1:
        raise ConfigError("data needs exactly one of train_data_path, prompts_path, hidden_states_path")
    if not config.get("output_dir"):
        raise ConfigError("output_dir is required")
    online = sources[0] != "hidden_states_path"
    check_evaluation(config, online)
    check_deployment(config, online)


def check_evaluation(config: dict[str, Any], online: bool) -> None:
    """Evaluation reads offline features only, and needs its interval (0.2.0 ``_validate_run_structure``)."""
    data, training = config.get("data") or {}, config.get("training") or {}
    if data.get("eval_data_path"):
        raise ConfigError(
            "data.eval_data_path is unsupported; online evaluation is not supported by the server-only capture path"
        )
    if bool(data.get("eval_hidden_states_path")) != bool(training.get("eval_interval")):
        raise ConfigError("an eval data source and training.eval_interval must be configured together")
    if data.get("eval_hidden_states_path") and online:
        raise ConfigError("data.eval_hidden_states_path requires an offline training data source")


def check_deployment(config: dict[str, Any], online: bool) -> None:
    """SpecForge 0.2.0's topology rules (config/schema.py ``_validate_run_structure``)."""
    deployment = config.get("deployment") or {}
    mode = deployment.get("mode", "local_colocated")
    if mode != "disaggregated" and deployment.get("disaggregated") is not None:
        raise ConfigError("deployment.disaggregated requires deployment.mode=disaggregated")
    disaggregated = deployment.get("disaggregated") or {}
    if online and mode != "disaggregated":
        raise ConfigError(
            "online training requires deployment.mode=disaggregated; colocated online training is no longer supported"
        )
    if online and disaggregated.get("backend", "mooncake") != "mooncake":
        raise ConfigError("online disaggregated training requires deployment.disaggregated.backend=mooncake")
    managed = disaggregated.get("managed_local")
    if managed is not None:
        if not online:
            raise ConfigError("managed_local supports online capture only")
        explicit = [
            key
            for key in ("server_urls", "mooncake_master_server_addr", "mooncake_metadata_server")
            if disaggregated.get(key)
        ]
        if explicit:
            raise ConfigError(
                f"managed_local derives capture server URLs and Mooncake endpoints; do not set {explicit[0]}"
            )


def load_config(path: Path, overrides: list[str]) -> dict[str, Any]:
    try:
        config = parse_yaml(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path} is not valid JSON: {error}") from None
    for override in overrides:
        apply_override(config, override)
    check_schema(config)
    return config
