"""Parsed modules of a release and static resolution of the constants their code names.

Only what a reader can settle without running the code is resolved: literals, module-level names bound
to literals (also through ``from x import NAME``), ``+`` of lists or strings, ``list(...)`` of those, and
the members of ``Literal[...]``. Anything else resolves to None ("decided at run time").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from engine_facts.extract.sources import ReleaseSources

_UNRESOLVED = object()


def module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


@dataclass
class Module:
    path: str
    tree: ast.Module
    assignments: dict[str, ast.expr] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)


class PackageIndex:
    """The modules of a release by dotted name, parsed on first use; unparseable files are listed."""

    def __init__(self, sources: ReleaseSources) -> None:
        self.texts = {module_name(path): (path, text) for path, text in sources.files.items()}
        self._modules: dict[str, Module] = {}
        self.unparsed: list[str] = []

    def module(self, name: str) -> Module | None:
        if name not in self._modules:
            if name not in self.texts:
                return None
            path, text = self.texts[name]
            try:
                tree = ast.parse(text, filename=path)
            except (SyntaxError, ValueError):
                self.unparsed.append(path)
                return None
            self._modules[name] = _index_module(path, tree)
        return self._modules[name]

    def module_of_path(self, path: str) -> Module | None:
        return self.module(module_name(path))

    def paths(self) -> list[str]:
        return sorted(path for path, _ in self.texts.values())

    def find_class(self, name: str, near: Module | None = None) -> tuple[Module, ast.ClassDef] | None:
        """A class by name: in ``near`` or through its imports (followed up to a few re-exports)."""
        module, wanted = near, name
        for _ in range(6):
            if module is None:
                return None
            if wanted in module.classes:
                return module, module.classes[wanted]
            imported = module.imports.get(wanted)
            if imported is None:
                return None
            module, wanted = self.module(imported[0]), imported[1]
        return None

    def value(self, node: ast.expr | None, module: Module, depth: int = 0) -> Any:
        """The literal value of an expression, or None when it cannot be settled statically."""
        result = self._value(node, module, depth)
        return None if result is _UNRESOLVED else result

    def _value(self, node: ast.expr | None, module: Module, depth: int) -> Any:
        if node is None or depth > 8:
            return _UNRESOLVED
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self._value(element, module, depth + 1) for element in node.elts]
            return _UNRESOLVED if any(item is _UNRESOLVED for item in items) else list(items)
        if isinstance(node, ast.Name):
            return self._name(node.id, module, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._value(node.left, module, depth + 1), self._value(node.right, module, depth + 1)
            both_lists = isinstance(left, list) and isinstance(right, list)
            if both_lists or (isinstance(left, str) and isinstance(right, str)):
                return left + right
            return _UNRESOLVED
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"list", "sorted", "set", "tuple"}
            and len(node.args) == 1
        ):
            inner = self._value(node.args[0], module, depth + 1)
            if isinstance(inner, dict):
                inner = list(inner)
            return list(inner) if isinstance(inner, list) else _UNRESOLVED
        if isinstance(node, ast.Dict):
            keys = [self._value(key, module, depth + 1) for key in node.keys if key is not None]
            return _UNRESOLVED if any(key is _UNRESOLVED for key in keys) else dict.fromkeys(keys)
        if isinstance(node, ast.Subscript) and _is_literal_type(node.value):
            return literal_members(node)
        return _UNRESOLVED

    def _name(self, name: str, module: Module, depth: int) -> Any:
        if name in module.assignments:
            return self._value(module.assignments[name], module, depth + 1)
        imported = module.imports.get(name)
        source = self.module(imported[0]) if imported else None
        if imported and source is not None:
            return self._name(imported[1], source, depth + 1)
        return _UNRESOLVED


def _is_literal_type(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Literal") or (
        isinstance(node, ast.Attribute) and node.attr == "Literal"
    )


def literal_members(node: ast.Subscript) -> list[Any] | None:
    """The members of ``Literal[a, b, ...]`` when all are constants."""
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    values = [element.value for element in elements if isinstance(element, ast.Constant)]
    return values if len(values) == len(elements) else None


def _index_module(path: str, tree: ast.Module) -> Module:
    module = Module(path, tree)
    package = module_name(path).rsplit(".", 1)[0] if not path.endswith("__init__.py") else module_name(path)
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            module.assignments[statement.targets[0].id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            module.assignments[statement.target.id] = statement.value
        elif isinstance(statement, ast.ImportFrom):
            source = _absolute(statement, package)
            for alias in statement.names:
                module.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(statement, ast.ClassDef):
            module.classes[statement.name] = statement
    return module


def _absolute(statement: ast.ImportFrom, package: str) -> str:
    if not statement.level:
        return statement.module or ""
    base = package.split(".")
    base = base[: len(base) - (statement.level - 1)] if statement.level > 1 else base
    return ".".join([*base, statement.module] if statement.module else base)


def string_template(node: ast.expr) -> str | None:
    """A log message as text: f-string fields and %-placeholders become ``{}``; None if not a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = string_template(node.left), string_template(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return string_template(node.left)
    return None
