"""The Python examples of README.md and of every docs/*.md page run as written.

* ``test_readme_example_runs``: the README's ten lines, and its pose derivatives match autodiff.
* ``test_identification_example_runs``: the identification how-to's example recovers its masses.
* ``test_page_examples_run[PAGE]``: every ```` ```python ```` block of PAGE, top to bottom in one
  namespace (as a reader runs them), in a fresh interpreter in a temporary folder (files the examples
  write land there; ``"tests/data/...`` paths point at this repository's test data).
* ``test_marked_example[PAGE:LINE]``: one per block marked ``skip``, reported as skipped with its reason.

A block is marked by an HTML comment on the lines just above its fence (invisible on GitHub and
in the site):

* ``<!-- docs-test: skip REASON -->``: not run here (it needs OpenSim's model library, or runs for
  minutes); reported by ``test_marked_example``.
* ``<!-- docs-test: tested-by tests/test_x.py -->``: that test file runs the block with its own
  assertions. It is run here too, as long as that file does not name this page's file (so no
  block is left unrun while that test still reads it from elsewhere).

Bash blocks are not run here (``tests/test_cli.py`` runs the command line).
"""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(skip|tested-by)\s+(.*?)\s*-->")


def python_blocks(page: str):
    """``(line, code, directive, argument)`` of each ```python block of ``page`` (line: 1-based, of
    the fence); directive is None, "skip" or "tested-by"."""
    lines = (ROOT / page).read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,})\s*(\S*)", lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        end = i + 1
        while end < len(lines) and not re.match(rf"^\s*{ticks}\s*$", lines[end]):
            end += 1
        if lang == "python":
            directive = argument = None
            j = i - 1
            while j >= 0 and (not lines[j].strip() or lines[j].lstrip().startswith("<!--")):
                m = _DIRECTIVE.search(lines[j])
                if m:
                    directive, argument = m.groups()
                    break
                j -= 1
            code = textwrap.dedent("\n".join(line[len(indent):] for line in lines[i + 1:end]))
            blocks.append((i + 1, code, directive, argument))
        i = end + 1
    return blocks


def _reads_page(test_file: str, page: str) -> bool:
    path = ROOT / test_file
    assert path.is_file(), f"{page}: 'tested-by {test_file}': no such file"
    return pathlib.PurePath(page).name in path.read_text()


def _runnable(page: str):
    """The blocks this page's test runs; the others, each with why."""
    run, other = [], []
    for line, code, directive, argument in python_blocks(page):
        if directive == "skip":
            assert argument, f"{page}:{line}: a skip needs a reason"
            other.append((line, f"skip: {argument}"))
        elif directive == "tested-by" and _reads_page(argument, page):
            other.append((line, f"run by {argument}"))
        else:
            run.append((line, code))
    return run, other


_SKIPPED = [pytest.param(page, line, directive_arg, id=f"{page}:{line}")
            for page in PAGES for line, _, directive, directive_arg in python_blocks(page) if directive == "skip"]


def _run_page(page: str, tmp_path):
    """The page's runnable blocks in one fresh interpreter, one namespace, cwd ``tmp_path``."""
    run, other = _runnable(page)
    script = ["import sys", "ns = {'__name__': '__main__'}"]
    for line, code in run:
        code = code.replace('"tests/data/', f'"{ROOT}/tests/data/')
        script.append(f"print('--- {page}:{line}', flush=True)")
        script.append(f"exec(compile({code!r}, {f'{page}:{line}'!r}, 'exec'), ns)")
    script.append("print('DOCS-OK', flush=True)")
    out = subprocess.run([sys.executable, "-c", "\n".join(script)], capture_output=True, text=True, timeout=900,
                         cwd=tmp_path, env={**os.environ, "JAX_PLATFORMS": "cpu", "MPLBACKEND": "Agg"})
    summary = (f"{page}: {len(run)} block(s) run; {len(other)} not run here: "
               + ", ".join(f"line {line} ({why})" for line, why in other))
    print(summary)
    assert out.returncode == 0 and "DOCS-OK" in out.stdout, (
        summary + "\n" + out.stdout[-4000:] + "\n" + out.stderr[-6000:])


@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)[0]])
def test_page_examples_run(page, tmp_path):
    _run_page(page, tmp_path)


@pytest.mark.parametrize("page, line, reason", _SKIPPED)
def test_marked_example(page, line, reason):
    pytest.skip(f"{page}:{line}: {reason}")


_CHECK_TEN_LINES = """
q = qs[1234]
hess = jax.jit(jax.hessian(lambda x: mbjax.body_poses(model, x)))(q)
assert derivs.dd_pose.shape == (4096, 2, 4, 4, 2, 2), derivs.dd_pose.shape
np.testing.assert_allclose(derivs.dd_pose[1234], hess, atol=1e-12)
qt, qdt = sol.ys
assert qt.shape == (101, 2) and np.all(np.isfinite(qt))
energy = jax.vmap(mbjax.total_energy, in_axes=(None, 0, 0))(model, qt, qdt)
drift = float(np.ptp(np.asarray(energy)))
assert drift < 1e-4 * float(np.abs(energy).max() + 1.0), drift
print("README-OK", drift)
"""


def test_readme_example_runs():
    """The ten lines, run as a user runs them: in a fresh interpreter (not in this worker, whose
    XLA state after hundreds of tests is not what a reader has).  Then, in the same interpreter:
    the batched pose Hessians equal ``jax.hessian`` of the poses, and the 1 s swing stays inside
    the elbow map's fitted range (else it raises) and conserves energy."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## Ten lines\n.*?```python\n(.*?)```", text, re.S).group(1)
    out = subprocess.run(
        [sys.executable, "-c", code + _CHECK_TEN_LINES],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0 and "README-OK" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]


def test_identification_example_runs():
    """The "Parameter identification" example (docs/how-to/identification.md) recovers the masses
    it was built with (2.0, 1.2 kg)."""
    text = (ROOT / "docs" / "how-to" / "identification.md").read_text()
    code = re.search(r"## Parameter identification\n.*?```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(code.replace("print(", "(lambda *a: None)("), "identification.md", "exec"), ns)
    np.testing.assert_allclose(ns["fitted"].mass, [2.0, 1.2], rtol=1e-6)
    assert ns["report"].converged and ns["info"].rank == 2 and ns["info"].unidentifiable == []
