"""House rules of the package's source, checked on every file of tsrep/."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tsrep"

#: The longest a function may be: from its ``def`` line to its last line, docstring included.
MAX_FUNCTION_LINES = 60


def long_functions(root: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function or method under `root`, nested ones included, longer
    than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # lineno is the def line (decorators sit above it); end_lineno is the body's last line.
                n_lines = node.end_lineno - node.lineno + 1
                if n_lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({n_lines} lines)")
    return found


def test_no_function_is_longer_than_60_lines():
    offenders = long_functions()
    assert not offenders, (
        f"{len(offenders)} function(s) longer than {MAX_FUNCTION_LINES} lines (def line to last line, docstring "
        "included); split them into helpers:\n" + "\n".join(offenders)
    )
