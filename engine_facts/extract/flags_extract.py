"""The launch flags a release's server parser accepts, read from its source with ``ast``.

Three ways of declaring a flag are understood:

- ``parser.add_argument("--name", "--alias", action=..., nargs=..., choices=...)`` inside the functions
  that build the serve parser (``add_cli_args``, ``make_arg_parser``, ``subparser_init``);
- vLLM's ``add_argument("--name", **group_kwargs["field"])`` where ``group_kwargs = get_kwargs(Config)``:
  the field's annotation in ``Config`` decides the kind (bool -> ``--x/--no-x``, Literal -> choices,
  list -> several values); and ``for key, value in get_kwargs(cls).items(): add_argument(f"--{key}")``;
- SGLang's declarative fields ``name: A[T, "help"]`` / ``A[T, Arg(aliases=..., choices=...)]``
  (``srt/server_args.py`` 0.5.14-0.5.19, ``srt/arg_groups/fields/*.py`` from 0.5.20): ``--name`` unless
  ``cli_name`` or ``no_cli``; bool -> store_true, Literal -> choices, list -> ``nargs="+"``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine_facts.extract.pyindex import Module, PackageIndex, literal_members

Takes = Literal["none", "optbool", "one", "optional", "many"]
BUILDERS = {"add_cli_args", "make_arg_parser", "subparser_init", "_add_cli_args"}
NO_VALUE_ACTIONS = ("store_true", "store_false", "store_const", "count", "help", "version")


@dataclass
class FlagFact:
    names: list[str]
    takes: Takes = "one"
    choices: list[str] | None = None
    deprecated: bool = False
    source: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def canonical(self) -> str:
        return self.names[0]


def serve_flag_files(engine: str, paths: list[str]) -> list[str]:
    """The files whose code builds the serve parser of the engine."""
    if engine == "sglang":
        return [
            path
            for path in paths
            if path == "sglang/srt/server_args.py" or path.startswith("sglang/srt/arg_groups/fields/")
        ]
    wanted = {
        "vllm/engine/arg_utils.py",
        "vllm/entrypoints/openai/cli_args.py",
        "vllm/entrypoints/cli/serve.py",
        "vllm/entrypoints/common/cli_args.py",
        "vllm/entrypoints/launchers/cli_args.py",
    }
    return [path for path in paths if path in wanted]


def _action_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _takes(action: str | None, nargs: Any) -> Takes:
    if action is not None:
        if action == "BooleanOptionalAction":
            return "optbool"
        if any(word.replace("_", "").lower() in action.replace("_", "").lower() for word in NO_VALUE_ACTIONS):
            return "none"
    if nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1):
        return "many"
    return "optional" if nargs == "?" else "one"


def _texts(values: Any) -> list[str] | None:
    if not isinstance(values, list) or not values:
        return None
    return sorted({str(value) for value in values})


class FlagReader:
    """Reads the flags of one engine release (see the module docstring)."""

    def __init__(self, index: PackageIndex, bool_is_optional: bool) -> None:
        self.index = index
        self.bool_is_optional = bool_is_optional
        self.flags: dict[str, FlagFact] = {}

    def add(self, fact: FlagFact) -> None:
        known = self.flags.get(fact.canonical)
        if known is None or (known.choices is None and fact.choices is not None):
            self.flags[fact.canonical] = fact

    # -- explicit add_argument calls ------------------------------------------------------------------

    def read_module(self, module: Module) -> None:
        for function in ast.walk(module.tree):
            if isinstance(function, ast.FunctionDef) and function.name in BUILDERS:
                self._read_builder(function, module)
        for node in module.tree.body:
            if isinstance(node, ast.ClassDef) and module.path.startswith(
                ("sglang/srt/server_args", "sglang/srt/arg_groups/fields")
            ):
                self._read_declared_fields(node, module)

    def _read_builder(self, function: ast.FunctionDef, module: Module) -> None:
        kwargs_of = _kwargs_bindings(function)
        enclosing = _enclosing_class(module, function)
        for node in ast.walk(function):
            if isinstance(node, ast.For):
                self._read_loop(node, kwargs_of, module, enclosing)
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
            ):
                continue
            names = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if not names or not names[0].startswith("-") or len(names) != len(node.args):
                continue
            self.add(self._explicit(names, node, kwargs_of, module))

    def _explicit(self, names: list[str], call: ast.Call, kwargs_of: dict[str, str], module: Module) -> FlagFact:
        options = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
        action = _action_name(options.get("action"))
        nargs = self.index.value(options.get("nargs"), module)
        fact = FlagFact(
            sorted(names, key=lambda name: (not name.startswith("--"), 0))[:1]
            + [name for name in names if name != sorted(names, key=lambda n: (not n.startswith("--"), 0))[0]],
            _takes(action, nargs),
            source=module.path,
        )
        fact.choices = _texts(self.index.value(options.get("choices"), module))
        fact.deprecated = _is_deprecated(action, options, self.index, module)
        for keyword in call.keywords:
            if keyword.arg is None and isinstance(keyword.value, ast.Subscript):
                self._from_config(fact, keyword.value, kwargs_of, module, options)
        return fact

    def _from_config(
        self,
        fact: FlagFact,
        subscript: ast.Subscript,
        kwargs_of: dict[str, str],
        module: Module,
        options: dict[str, ast.expr],
    ) -> None:
        owner = subscript.value.id if isinstance(subscript.value, ast.Name) else None
        field_name = subscript.slice.value if isinstance(subscript.slice, ast.Constant) else None
        if owner not in kwargs_of or not isinstance(field_name, str):
            return
        annotation = self._field_annotation(kwargs_of[owner], field_name, module)
        if annotation is not None and "action" not in options:
            fact.takes, choices = self._kind_of(annotation)
            fact.choices = fact.choices or choices

    # -- vLLM: for key, value in get_kwargs(cls).items(): add_argument(f"--{key}") -----------------------

    def _read_loop(self, loop: ast.For, kwargs_of: dict[str, str], module: Module, enclosing: str | None) -> None:
        source = loop.iter
        if not (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr == "items"
            and isinstance(source.func.value, ast.Name)
        ):
            return
        bound = kwargs_of.get(source.func.value.id)
        if bound is None or not any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
            for node in ast.walk(loop)
        ):
            return
        classes = [bound] if bound != "cls" else _with_subclasses(module, enclosing)
        for class_name in classes:
            for name, annotation in self._class_fields(class_name, module).items():
                takes, choices = self._kind_of(annotation)
                self.add(FlagFact(["--" + name.replace("_", "-")], takes, choices, source=module.path))

    # -- SGLang declarative fields ----------------------------------------------------------------------

    def _read_declared_fields(self, node: ast.ClassDef, module: Module) -> None:
        for statement in node.body:
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                continue
            declared = _annotated_parts(statement.annotation)
            if declared is None:
                continue
            inner, metadata = declared
            options = (
                {keyword.arg: keyword.value for keyword in metadata.keywords} if isinstance(metadata, ast.Call) else {}
            )
            if self.index.value(options.get("no_cli"), module) is True:
                continue
            name = self.index.value(options.get("cli_name"), module) or "--" + statement.target.id.replace("_", "-")
            aliases = self.index.value(options.get("aliases"), module) or []
            action = _action_name(options.get("action"))
            takes, choices = self._kind_of(inner, declared_fields=True)
            if action is not None:
                takes = _takes(action, None)
            nargs = self.index.value(options.get("nargs"), module)
            if nargs is not None and action is None:
                takes = _takes(None, nargs)
            explicit = _texts(self.index.value(options.get("choices"), module))
            fact = FlagFact([str(name), *map(str, aliases)], takes, explicit or choices, source=module.path)
            fact.deprecated = _is_deprecated(action, options, self.index, module)
            self.add(fact)

    # -- annotations ------------------------------------------------------------------------------------

    def _kind_of(self, annotation: ast.expr, declared_fields: bool = False) -> tuple[Takes, list[str] | None]:
        text = ast.unparse(annotation)
        literal = next(
            (
                node
                for node in ast.walk(annotation)
                if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal")
            ),
            None,
        )
        choices = _texts(literal_members(literal)) if literal is not None else None
        words = set(text.replace("[", " ").replace("]", " ").replace("|", " ").replace(",", " ").split())
        if "bool" in words and not ({"str", "int", "float"} & words):
            return ("optbool" if self.bool_is_optional and not declared_fields else "none"), None
        if words & {"list", "List", "tuple", "set"} and choices is None:
            return "many", None
        return "one", choices

    def _field_annotation(self, class_name: str, field_name: str, module: Module) -> ast.expr | None:
        return self._class_fields(class_name, module).get(field_name)

    def _class_fields(self, class_name: str, module: Module, depth: int = 0) -> dict[str, ast.expr]:
        found = self.index.find_class(class_name, module)
        if found is None or depth > 5:
            return {}
        owner, node = found
        fields: dict[str, ast.expr] = {}
        for base in node.bases:
            if isinstance(base, ast.Name):
                fields.update(self._class_fields(base.id, owner, depth + 1))
        for statement in node.body:
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and not (statement.target.id.startswith("_") or "ClassVar" in ast.unparse(statement.annotation))
            ):
                fields[statement.target.id] = statement.annotation
        return fields


def _annotated_parts(annotation: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """(inner type, metadata) of ``A[T, "help"]`` / ``Annotated[T, Arg(...)]``."""
    if not (isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in {"A", "Annotated"}):
        return None
    parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
    if len(parts) < 2:
        return None
    metadata = parts[1]
    if isinstance(metadata, ast.Constant) and isinstance(metadata.value, str):
        return parts[0], metadata
    if isinstance(metadata, ast.Call) and ast.unparse(metadata.func).endswith("Arg"):
        return parts[0], metadata
    return None


def _is_deprecated(action: str | None, options: Mapping[Any, ast.expr], index: PackageIndex, module: Module) -> bool:
    if action is not None and "deprecat" in action.lower():
        return True
    if index.value(options.get("deprecated"), module) is True:
        return True
    help_node = options.get("help")
    help_text = ast.unparse(help_node) if help_node is not None else ""
    return "deprecated" in help_text[:80].lower()


def _kwargs_bindings(function: ast.FunctionDef) -> dict[str, str]:
    """Local names bound to ``get_kwargs(Config)`` (or a copy of it) -> the config class name."""
    bound: dict[str, str] = {}
    for node in ast.walk(function):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if (
            isinstance(value, ast.Call)
            and ast.unparse(value.func).split(".")[-1] in {"get_kwargs", "_compute_kwargs"}
            and value.args
            and isinstance(value.args[0], ast.Name)
        ):
            bound[node.targets[0].id] = value.args[0].id
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id in {"cls"}
            and value.args
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id in bound
        ):
            bound[node.targets[0].id] = bound[value.args[0].id]
    return bound


def _enclosing_class(module: Module, function: ast.FunctionDef) -> str | None:
    for name, node in module.classes.items():
        if function in node.body:
            return name
    return None


def _with_subclasses(module: Module, class_name: str | None) -> list[str]:
    if class_name is None:
        return []
    names = [class_name]
    names += [
        name
        for name, node in module.classes.items()
        if any(isinstance(base, ast.Name) and base.id == class_name for base in node.bases)
    ]
    return names


def read_flags(engine: str, index: PackageIndex) -> dict[str, FlagFact]:
    """Flag facts by canonical name for the serve parser of one release."""
    arg_utils = index.module_of_path("vllm/engine/arg_utils.py")
    bool_is_optional = arg_utils is not None and "BooleanOptionalAction" in ast.unparse(arg_utils.tree)
    reader = FlagReader(index, bool_is_optional)
    for path in serve_flag_files(engine, index.paths()):
        module = index.module_of_path(path)
        if module is not None:
            reader.read_module(module)
    return reader.flags
