"""Environment variables a release reads, from its source.

- SGLang: the ``Envs`` class of ``srt/environ.py`` (``NAME = EnvBool(default)``, default recorded), plus
  literal names passed to ``os.getenv`` / ``os.environ.get`` / ``os.environ[...]`` / ``get_*_env_var``;
- vLLM: the keys of ``environment_variables`` in ``envs.py``, plus the same literal reads.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from engine_facts.extract.pyindex import PackageIndex

PREFIXES = {"sglang": ("SGLANG_", "SGL_"), "vllm": ("VLLM_",)}
READERS = {
    "getenv",
    "get",
    "get_bool_env_var",
    "get_int_env_var",
    "get_float_env_var",
    "get_str_env_var",
    "environ_get",
    "setdefault",
    "pop",
}


@dataclass
class EnvFact:
    name: str
    default: str | None
    source: str


def _declared_sglang(index: PackageIndex) -> dict[str, EnvFact]:
    module = index.module_of_path("sglang/srt/environ.py")
    found: dict[str, EnvFact] = {}
    if module is None or "Envs" not in module.classes:
        return found
    for statement in module.classes["Envs"].body:
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Call)
        ):
            default = ast.unparse(statement.value.args[0]) if statement.value.args else None
            name = statement.targets[0].id
            found[name] = EnvFact(name, default, module.path)
    return found


def _declared_vllm(index: PackageIndex) -> dict[str, EnvFact]:
    module = index.module_of_path("vllm/envs.py")
    found: dict[str, EnvFact] = {}
    table = module.assignments.get("environment_variables") if module else None
    if module is None or not isinstance(table, ast.Dict):
        return found
    for key in table.keys:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found[key.value] = EnvFact(key.value, None, module.path)
    return found


def read_environment(engine: str, index: PackageIndex) -> dict[str, EnvFact]:
    found = _declared_sglang(index) if engine == "sglang" else _declared_vllm(index)
    prefixes = PREFIXES[engine]
    pattern = re.compile(r"\b(?:" + "|".join(prefixes) + r")[A-Z0-9_]+")
    for path in index.paths():
        text = index.texts[path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")][1]
        if not pattern.search(text) or "/tests/" in path or "/test/" in path:
            continue
        module = index.module_of_path(path)
        if module is None:
            continue
        for node in ast.walk(module.tree):
            name = _read_name(node)
            if name and name.startswith(prefixes) and name not in found:
                found[name] = EnvFact(name, None, path)
    return found


def _read_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        value = node.args[0].value
        if function in READERS and isinstance(value, str):
            return value
    if (
        isinstance(node, ast.Subscript)
        and ast.unparse(node.value).endswith("environ")
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None
