"""Traced programs kept on disk (``mbjax.program_store``): reused without tracing, rebuilt when the
model's structure, the shapes or the versions change, and never run from a damaged or foreign file.

References: the function's own value computed by NumPy; a Python-side trace counter (a program read
back is not traced); and, end to end, the OpenSim tools' files written by ``mbjax run`` with the
store equal bit for bit to those written without it (tests/test_cli.py::test_tool_compile_cache).
"""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import program_store as ps

TRACES = []


class Cfg(eqx.Module):
    scale: jnp.ndarray
    k: int = eqx.field(static=True)


@ps.persistent("tests.test_program_store.affine")
def affine(cfg, x):
    TRACES.append(1)
    return cfg.scale * x + cfg.k, jnp.sum(x)


@pytest.fixture
def store(tmp_path):
    folder = ps.enable_program_store(tmp_path / "programs")
    ps.forget()
    TRACES.clear()
    yield folder
    ps.disable_program_store()
    ps.forget()


def _check(out, cfg, x):
    x = np.asarray(x)
    np.testing.assert_allclose(np.asarray(out[0]), float(cfg.scale) * x + cfg.k, rtol=1e-15)
    np.testing.assert_allclose(float(out[1]), x.sum(), rtol=1e-15)


def _files(folder, suffix=ps.SUFFIX):
    return sorted(f for f in os.listdir(folder) if f.endswith(suffix))


def test_a_program_read_back_is_not_traced(store):
    cfg, x = Cfg(jnp.asarray(2.0), 3), jnp.arange(4.0)
    _check(affine(cfg, x), cfg, x)
    assert len(TRACES) == 1 and len(_files(store)) == 1
    ps.forget()  # as a new process
    cfg2 = Cfg(jnp.asarray(-1.5), 3)  # new array values: the same program
    _check(affine(cfg2, x + 1), cfg2, x + 1)
    assert len(TRACES) == 1 and len(_files(store)) == 1


@pytest.mark.parametrize("change", ["static", "shape", "dtype", "versions", "source", "checks"])
def test_a_change_of_structure_shapes_or_versions_is_a_new_program(store, monkeypatch, change):
    cfg, x = Cfg(jnp.asarray(2.0), 3), jnp.arange(4.0)
    affine(cfg, x)
    ps.forget()
    if change == "static":
        cfg = Cfg(jnp.asarray(2.0), 4)
    elif change == "shape":
        x = jnp.arange(5.0)
    elif change == "dtype":
        x = jnp.arange(4, dtype=jnp.int32)
    elif change == "versions":
        monkeypatch.setattr(ps, "_versions", lambda: ("another jax",))
    elif change == "source":
        monkeypatch.setattr(ps, "_SOURCE_HASH", ["another mbjax"])
    else:
        monkeypatch.setattr(mbjax._checks, "_ENABLED", [not mbjax.config.checks_enabled()])
    _check(affine(cfg, x), cfg, x)
    assert len(TRACES) == 2 and len(_files(store)) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "foreign"])
def test_a_damaged_or_foreign_file_is_rebuilt_with_a_warning(store, damage):
    cfg, x = Cfg(jnp.asarray(2.0), 3), jnp.arange(4.0)
    affine(cfg, x)
    (name,) = _files(store)
    path = os.path.join(store, name)
    data = open(path, "rb").read()
    head = data.index(b"\n", len(ps.MAGIC)) + 1
    if damage == "foreign":  # another program's file under this name (its header holds its own key)
        affine(cfg, jnp.arange(6.0))
        other = [f for f in _files(store) if f != name][0]
        data = open(os.path.join(store, other), "rb").read()
    else:
        data = {"garbage": data[:head] + b"\x00not a program" * 50, "truncated": data[: len(data) // 2],
                "empty": b""}[damage]
    with open(path, "wb") as fh:
        fh.write(data)
    ps.forget()
    TRACES.clear()
    with pytest.warns(UserWarning, match=rf"program store: .*{name} cannot be used .*tracing again and rewriting it"):
        out = affine(cfg, x)
    _check(out, cfg, x)
    assert len(TRACES) == 1  # traced again, not run from the file
    ps.forget()
    TRACES.clear()
    affine(cfg, x)  # the rewritten file is good
    assert not TRACES


def test_programs_with_host_callbacks_are_not_kept(store):
    @ps.persistent("tests.test_program_store.checked")
    def checked(x):
        return eqx.error_if(x, jnp.any(x < 0), "negative")

    with mbjax.config.checks(True):
        np.testing.assert_array_equal(np.asarray(checked(jnp.arange(3.0))), [0.0, 1.0, 2.0])
        with pytest.raises(Exception, match="negative"):
            checked(-jnp.ones(3))
    assert not _files(store) and len(_files(store, ".skip")) == 1


def test_off_by_default_and_refuses_bad_folders(tmp_path):
    assert ps.program_store_dir() is None
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        ps.enable_program_store(tmp_path / "file")
    assert ps.program_store_dir() is None


def test_the_least_recently_used_files_go_past_the_cap(store, monkeypatch):
    monkeypatch.setattr(ps, "MAX_FILES", 2)
    cfg = Cfg(jnp.asarray(2.0), 3)
    for n in (3, 4):
        affine(cfg, jnp.arange(float(n)))
    first = _files(store)
    ps.forget()
    affine(cfg, jnp.arange(3.0))  # read back: now the most recently used
    affine(cfg, jnp.arange(5.0))  # a third program: the least recently used (n = 4) goes
    kept = _files(store)
    assert len(kept) == 2 and len(set(first) - set(kept)) == 1
    ps.forget()
    TRACES.clear()
    _check(affine(cfg, jnp.arange(3.0)), cfg, jnp.arange(3.0))
    assert not TRACES  # the one read most recently is still there


def test_programs_calling_jaxlibs_own_kernels_are_kept(store):
    """LAPACK calls (QR's Householder products have no cross-version guarantee in jax.export; the key
    pins the jaxlib version) are kept like any other program."""
    @ps.persistent("tests.test_program_store.least_squares")
    def least_squares(a, b):
        TRACES.append(1)
        q, r = jnp.linalg.qr(a)
        return (jax.scipy.linalg.solve_triangular(r, q.T @ b),)

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 3)), rng.normal(size=6)
    ref = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(np.asarray(least_squares(jnp.asarray(a), jnp.asarray(b))[0]), ref, rtol=1e-12)
    assert len(_files(store)) == 1 and not _files(store, ".skip")
    ps.forget()
    TRACES.clear()
    np.testing.assert_allclose(np.asarray(least_squares(jnp.asarray(a), jnp.asarray(2 * b))[0]), 2 * ref, rtol=1e-12)
    assert not TRACES
