"""vLLM speculative methods a release understands, read from its speculative config.

A method counts when it is a member of the ``SpeculativeMethod`` / ``*ModelTypes`` ``Literal`` aliases
or when the config code compares ``.method`` with it (0.8.5 accepts ``eagle3`` that way before
the alias lists it).
"""

from __future__ import annotations

import ast

from engine_facts.extract.pyindex import Module, PackageIndex, literal_members

FILES = ("vllm/config/speculative.py", "vllm/config.py")


def _literal_strings(node: ast.expr, module: Module, depth: int = 0) -> set[str]:
    found: set[str] = set()
    if depth > 4:
        return found
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for element in elements:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                found.add(element.value)
            elif isinstance(element, ast.Name) and element.id in module.assignments:
                found |= _literal_strings(module.assignments[element.id], module, depth + 1)
        members = literal_members(node)
        found |= {member for member in members or [] if isinstance(member, str)}
    return found


def read_speculative_methods(index: PackageIndex) -> list[str]:
    methods: set[str] = set()
    for path in FILES:
        module = index.module_of_path(path)
        if module is None:
            continue
        for name, value in module.assignments.items():
            if name == "SpeculativeMethod" or name.endswith("ModelTypes"):
                methods |= _literal_strings(value, module)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Compare) and ast.unparse(node.left).endswith(".method"):
                for comparator in node.comparators:
                    values = comparator.elts if isinstance(comparator, ast.Tuple | ast.List | ast.Set) else [comparator]
                    methods |= {
                        value.value
                        for value in values
                        if isinstance(value, ast.Constant) and isinstance(value.value, str)
                    }
        if methods:
            break
    return sorted(methods)
