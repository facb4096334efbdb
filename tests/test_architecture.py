"""The allowed directions of dependency, read from the source (every import, including those inside
functions; imports under ``if TYPE_CHECKING:`` count for directions, not for cycles):

- tools/ never imports agent/ (the agent uses the tools, never the other way round);
- twin/ (the stand-ins for the outside world) imports neither agent/ nor tools/;
- twin/ is imported only by the simulated host (tools/hosts/sim/), the tests and the benchmarks;
- engine_facts/ (what the real engine releases accept and print, shared by tools/ and twin/) imports none of
  agent/, tools/, twin/;
- nothing shipped imports tests/ or benchmarks/, and benchmarks/ never imports tests/;
- no import cycles between modules.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "tools", "twin", "prompts", "benchmarks", "engine_facts")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    type_only: bool  # under ``if TYPE_CHECKING:``
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        inner = type_only or (_type_checking(node) and child in getattr(node, "body", []))
        yield child, inner
        yield from _walk(child, inner)


def imports_of(path: Path) -> list[Import]:
    source = module_name(path)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    found: list[Import] = []
    for node, type_only in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base for alias in node.names]
        found += [
            Import(source, target, type_only, getattr(node, "lineno", 0))
            for target in targets
            if target.split(".")[0] in (*PACKAGES, "tests")
        ]
    return found


@functools.cache
def all_imports() -> tuple[Import, ...]:
    files = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    files += sorted((ROOT / "tests").rglob("*.py"))
    return tuple(item for path in files for item in imports_of(path))


def top(dotted: str) -> str:
    return dotted.split(".")[0]


def violations(rule: str) -> list[str]:
    wrong = []
    for item in all_imports():
        source, target = item.source, item.target
        broken = {
            "tools never import agent": top(source) == "tools" and top(target) == "agent",
            "twin imports neither agent nor tools": top(source) == "twin" and top(target) in ("agent", "tools"),
            "only the simulated host, tests and benchmarks import twin": top(target) == "twin"
            and top(source) not in ("twin", "tests", "benchmarks")
            and not source.startswith("tools.hosts.sim"),
            "nothing shipped imports tests or benchmarks": top(source)
            in ("agent", "tools", "twin", "prompts", "engine_facts")
            and top(target) in ("tests", "benchmarks"),
            "benchmarks never import tests": top(source) == "benchmarks" and top(target) == "tests",
            "engine_facts imports none of agent, tools, twin": top(source) == "engine_facts"
            and top(target) in ("agent", "tools", "twin"),
        }[rule]
        if broken:
            wrong.append(f"{source} (line {item.line}) imports {target}")
    return wrong


@pytest.mark.parametrize(
    "rule",
    [
        "tools never import agent",
        "twin imports neither agent nor tools",
        "only the simulated host, tests and benchmarks import twin",
        "nothing shipped imports tests or benchmarks",
        "benchmarks never import tests",
        "engine_facts imports none of agent, tools, twin",
    ],
)
def test_imports_run_in_the_allowed_directions(rule: str) -> None:
    assert violations(rule) == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in edges.get(node, ()):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_there_are_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {}
    for item in all_imports():
        if not item.type_only and item.source != item.target and top(item.source) != "tests":
            edges.setdefault(item.source, set()).add(item.target)
    assert cycles(edges) == []


def test_the_checks_see_a_cycle_and_a_wrong_direction() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert any(item.target.startswith("tools.") for item in imports_of(ROOT / "agent" / "loop.py"))
    assert imports_of(ROOT / "tools" / "hosts" / "sim" / "host.py")[0].target.startswith(("tools", "twin"))
