"""House rules on size: no function in tpugraphs_tools/ over 80 lines, no module over 400.

Why: a function longer than a screen is read in pieces and a module past 400 lines holds more
than one job. A function's length is ``end_lineno - lineno + 1`` of its ``def`` (decorators
not counted), nested ones included and counted on their own too; a module's is its line count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tpugraphs_tools

PACKAGE = Path(tpugraphs_tools.__file__).parent
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400

def _functions(tree: ast.AST, prefix: str = "") -> dict[str, int]:
    """Qualified name (``Class.method``, ``outer.inner``) → lines, of every def in ``tree``."""
    found: dict[str, int] = {}

    def add(more: dict[str, int]) -> None:  # a name defined twice (if/else, setter) keeps its longest
        for name, lines in more.items():
            found[name] = max(found.get(name, 0), lines)

    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                add({name: node.end_lineno - node.lineno + 1})
            add(_functions(node, f"{name}."))
        else:
            add(_functions(node, prefix))
    return found


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    """(function → lines, module → lines) over the package, keyed ``path:qualname``/``path``."""
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        modules[rel] = len(text.splitlines())
        for name, lines in _functions(ast.parse(text, rel)).items():
            functions[f"{rel}:{name}"] = lines
    return functions, modules


def _over(sizes: dict[str, int], limit: int) -> list[str]:
    return [f"{name}: {lines} lines (limit {limit})" for name, lines in sorted(sizes.items())
            if lines > limit]


def test_no_function_over_80_lines() -> None:
    functions, _ = _sizes()
    assert _over(functions, MAX_FUNCTION_LINES) == []


def test_no_module_over_400_lines() -> None:
    _, modules = _sizes()
    assert _over(modules, MAX_MODULE_LINES) == []


def test_nested_and_method_definitions_are_counted() -> None:
    """The walk sees methods and closures, each with its own length."""
    tree = ast.parse("class A:\n    def m(self):\n        def inner():\n            pass\n"
                     "        return 1\n\n\nasync def f():\n    pass\n")
    assert _functions(tree) == {"A.m": 4, "A.m.inner": 2, "f": 2}
    twice = ast.parse("if X:\n    def g():\n        pass\nelse:\n    def g():\n        a = 1\n"
                      "        return a\n")
    assert _functions(twice) == {"g": 3}
