"""The documentation site builds with ``mkdocs build --strict``: every page, link, anchor and included
snippet resolves, the API reference is generated from the docstrings, the notebooks are rendered.

The docs packages are in the ``test`` extra (``pip install -e '.[test]'``); without them this test
fails, naming what is missing (it is never skipped).  The Python examples of the pages run in
``tests/test_readme.py``.
"""

import importlib
import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_DOCS_PACKAGES = {  # module: distribution in the test extra
    "mkdocs": "mkdocs",
    "material": "mkdocs-material",
    "mkdocstrings": "mkdocstrings[python]",
    "mkdocstrings_handlers.python": "mkdocstrings-python",
    "mkdocs_jupyter": "mkdocs-jupyter",
    "griffe_public_redundant_aliases": "griffe-public-redundant-aliases",
}


def _documented_public_names():
    """mbjax's lazily exported functions and classes that carry their own docstring (what
    mkdocstrings renders; a constant such as ``GROUND`` has none)."""
    import mbjax

    names = []
    for name, (module, attribute) in mbjax._EXPORTS.items():
        if attribute is None or name in mbjax._MOVED:  # the tiers' names: on their own pages
            continue
        obj = getattr(importlib.import_module(f"mbjax.{module}"), attribute)
        own_doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
        if callable(obj) and own_doc:
            names.append(name)
    return names


def test_docs_site_builds_strictly(tmp_path):
    missing = [dist for module, dist in _DOCS_PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        pytest.fail(f"the documentation packages {missing} are not installed; they are in the test extra: "
                    f"pip install -e '.[test]'")
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, f"mkdocs build --strict failed:\n{out.stdout[-5000:]}\n{out.stderr[-15000:]}"

    # the README's sections are included in the getting-started page (pymdownx.snippets)
    getting_started = (site / "getting-started" / "index.html").read_text()
    assert "Run the main job" in getting_started and "NaturalCubicSpline" in getting_started
    # every documented public name of the lazily loaded top-level package has its entry
    api = (site / "reference" / "mbjax" / "index.html").read_text()
    absent = [name for name in _documented_public_names() if f'id="mbjax.{name}"' not in api]
    assert not absent, f"not in the API reference page: {absent}"
    import mbjax

    for name, tier in mbjax._MOVED.items():  # mbjax.reference, mbjax.config; mbjax.analysis.sharing on sharing.md
        page = site / "reference" / tier.rsplit(".", 1)[-1] / "index.html"
        assert f'id="mbjax.{tier}.{name}"' in page.read_text(), name
    io_page = (site / "reference" / "io" / "index.html").read_text()  # mbjax.io loads its names lazily too
    absent = [n for n in ("load_osim", "read_storage", "read_trc", "write_osim", "load_markers")
              if f'id="mbjax.io.{n}"' not in io_page]
    assert not absent, f"not in the mbjax.io reference page: {absent}"
    for page in ("io", "muscles", "wrapping", "identify", "sharing", "ligaments", "maps", "reactions"):
        html = (site / "reference" / page / "index.html").read_text()
        assert html.count("doc-heading") > 5, f"reference/{page}: its members are not rendered"
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "notebooks" / nb.stem / "index.html").is_file(), f"{nb.name} is not rendered"


def test_every_notebook_in_the_docs():
    """Each notebook is linked from docs/notebooks/ (rendered in the site) and in mkdocs.yml's nav."""
    nav = (ROOT / "mkdocs.yml").read_text()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        link = ROOT / "docs" / "notebooks" / nb.name
        assert link.exists() and link.resolve() == nb.resolve(), f"docs/notebooks/{nb.name} must link to {nb}"
        assert f"notebooks/{nb.name}" in nav, f"mkdocs.yml's nav lacks notebooks/{nb.name}"
