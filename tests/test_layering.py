"""The package's shape, read from its source (no import): modules import one another without a
circle, no function-local import stands in for a module-level one that would close a circle (the
function-local imports that remain keep ``import mbjax`` and the command line light), and no module
grows past about 500 lines."""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mbjax")
MAX_LINES = 520


def _modules() -> dict[str, str]:
    """Dotted module name -> file."""
    out = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _targets(mods, module, node) -> list[str]:
    """The mbjax modules an import statement of ``module`` loads (not the packages above ``module``,
    which Python imports first whatever the statement)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    package = module if mods[module].endswith("__init__.py") else module.rsplit(".", 1)[0]
    if node.level:
        parts = package.split(".")
        target = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("mbjax"):
        return []
    names = [a.name for a in node.names]
    out = [f"{target}.{n}" for n in names if f"{target}.{n}" in mods]
    if target in mods and any(f"{target}.{n}" not in mods for n in names) and not module.startswith(target + "."):
        out.append(target)
    return out


def _graph():
    """(module-level edges, function-local imports as (module, line, target))."""
    mods = _modules()
    top, local = {m: set() for m in mods}, []
    for m, path in mods.items():
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        module_level = set()
        for stmt in tree.body:  # module level, including inside a top-level if/try
            stack = [stmt]
            while stack:
                s = stack.pop()
                module_level.add(s)
                if isinstance(s, (ast.If, ast.Try)):
                    stack.extend(s.body + s.orelse + getattr(s, "finalbody", [])
                                 + [x for h in getattr(s, "handlers", []) for x in h.body])
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(mods, m, node):
                    if node in module_level:
                        top[m].add(t)
                    else:
                        local.append((m, node.lineno, t))
    return top, local


def _reaches(top, a, b) -> bool:
    seen, stack = set(), [a]
    while stack:
        x = stack.pop()
        if x == b:
            return True
        if x not in seen:
            seen.add(x)
            stack.extend(top[x])
    return False


def test_no_import_circle_at_module_level():
    top, _ = _graph()
    circles = sorted((a, b) for a in top for b in top[a] if b != a and _reaches(top, b, a))
    assert not circles, f"modules importing each other (directly or through others): {circles}"


def test_no_function_local_import_dodges_a_circle():
    top, local = _graph()
    dodges = sorted(f"{m}:{line} imports {t}" for m, line, t in local if t != m and _reaches(top, t, m))
    assert not dodges, ("function-local imports that would close an import circle at module level "
                        f"(move what both need to a lower module): {dodges}")


def test_file_io_does_not_import_the_opensim_workflow():
    """``mbjax.io`` (files: storage, trc, coordinates tables) sits below ``mbjax.opensim`` (the workflow
    on those files): it reads what it needs of an OpenSim model from ``model.osim``, filled at load,
    and its lazy ``load_osim``, ... names point into ``mbjax.opensim`` without importing it."""
    top, local = _graph()
    up = sorted({f"{m} imports {t}" for m in top for t in top[m] if m.startswith("mbjax.io") and t.startswith("mbjax.opensim")}
                | {f"{m}:{line} imports {t}" for m, line, t in local
                   if m.startswith("mbjax.io") and t.startswith("mbjax.opensim")})
    assert not up, up


@pytest.mark.parametrize("limit", [MAX_LINES])
def test_no_module_over_about_500_lines(limit):
    long = {m: n for m, path in _modules().items() if (n := sum(1 for _ in open(path, encoding="utf-8"))) > limit}
    assert not long, f"modules over {limit} lines (split them by concept): {long}"


def test_the_graph_sees_imports():
    """The reader itself: known module-level and function-local edges are found."""
    top, local = _graph()
    assert "mbjax._kinematics" in top["mbjax._dynamics"]
    assert "mbjax._model" in top["mbjax._kinematics"]
    assert any(m == "mbjax.analysis.identify.static_scaling" and t == "mbjax.analysis.ik" for m, _, t in local)
