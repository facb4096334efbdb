"""vLLM attention backends of a release: name, whether it is an MLA backend, and which GPU generations
(compute capability major) its ``supports_compute_capability`` accepts.

The capability check is read, not run: only a ``return`` of comparisons of ``capability.major`` /
``capability.minor`` with integer constants (``==``, ``in [...]``, ``>=``, ``and``/``or``, ``True``) is
evaluated, for majors 7-12; any other body leaves the generations unknown (None).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine_facts.extract.pyindex import PackageIndex

MAJORS = (7, 8, 9, 10, 11, 12)
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.GtE: operator.ge,
    ast.Gt: operator.gt,
    ast.LtE: operator.le,
    ast.Lt: operator.lt,
    ast.In: lambda left, right: left in right,
    ast.NotIn: lambda left, right: left not in right,
}


@dataclass
class BackendFact:
    name: str
    mla: bool
    capability_majors: list[int] | None
    source: str


class _Unknown(Exception):
    pass


def _evaluate(node: ast.expr, major: int) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_evaluate(element, major) for element in node.elts]
    if isinstance(node, ast.Attribute) and node.attr == "major":
        return major
    if isinstance(node, ast.Attribute) and node.attr == "minor":
        return 0
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(value, major) for value in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return _COMPARE[type(node.ops[0])](_evaluate(node.left, major), _evaluate(node.comparators[0], major))
    raise _Unknown


def _majors(function: ast.FunctionDef) -> list[int] | None:
    returns = [statement for statement in function.body if isinstance(statement, ast.Return)]
    if len(returns) != 1 or len(function.body) != 1 or returns[0].value is None:
        return None
    try:
        return [major for major in MAJORS if _evaluate(returns[0].value, major)]
    except (_Unknown, TypeError):
        return None


def read_backends(index: PackageIndex) -> list[BackendFact]:
    found: dict[str, BackendFact] = {}
    for path in index.paths():
        if not path.startswith(("vllm/v1/attention/backends/", "vllm/attention/backends/")):
            continue
        module = index.module_of_path(path)
        for node in module.classes.values() if module else []:
            methods = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
            name_method = methods.get("get_name")
            returned = name_method.body[-1] if name_method and name_method.body else None
            if not (
                isinstance(returned, ast.Return)
                and isinstance(returned.value, ast.Constant)
                and isinstance(returned.value.value, str)
            ):
                continue
            name = returned.value.value
            capability = methods.get("supports_compute_capability")
            mla = "MLA" in name
            fact = BackendFact(name, mla, _majors(capability) if capability else None, path)
            if name not in found or found[name].capability_majors is None:
                found[name] = fact
    return sorted(found.values(), key=lambda fact: fact.name)
