"""Moment arms through OpenSim's wrap surfaces are the derivatives of the lengths mbjax computes.

The iterative surfaces stop where OpenSim's tests stop them (the torus's ``lmdif`` on relative
reductions, the ellipsoid's tangent search at ``ssq <= 1e-8``), not at the roots they aim at, so
their derivatives are those of the stopped iterates.  Independent reference: central differences
of ``muscle_lengths`` (which equal OpenSim's lengths, ``tests/validation``).  Entries where a
discrete decision (a wrap switching on or off, a segment count, an iteration count) changes within
the stencil are recognised by differences with h and h/10 disagreeing, and left out (only a few).
Forward mode (``moment_arms``) and reverse mode (``jax.jacrev(muscle_lengths)``).
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.muscles import moment_arms, muscle_lengths
from mbjax.muscles.moment_arms import wrapped_coordinate_spans
from mbjax.muscles.paths import get_paths

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import MOBL, RAJAGOPAL, needs_mobl, needs_rajagopal  # noqa: E402

H = 1e-6


def _poses(model, n, seed):
    info = model.osim
    lo = np.maximum(np.asarray(info.lower), -3.0)
    hi = np.minimum(np.asarray(info.upper), 3.0)
    return lo + (hi - lo) * np.random.default_rng(seed).uniform(0.02, 0.98, size=(n, lo.size))


def _differences(model, qs):
    """-∂L/∂q ``(n, nq, nm)`` by central differences with h and h/10 (one compiled length program)."""
    n, nq = qs.shape
    eye = np.eye(nq)
    steps = np.array([H, H / 10])
    pts = np.concatenate([(qs[:, None, None] + s * steps[None, :, None, None] * eye[None, None]).reshape(-1, nq)
                          for s in (1, -1)])
    # in chunks of n poses: the program of the moment arms' own batch shape (notebook 05 compiles the same)
    lengths_of = jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))
    lengths = np.concatenate([np.asarray(lengths_of(model, jnp.asarray(c))) for c in np.split(pts, len(pts) // n)])
    plus, minus = lengths.reshape(2, n, 2, nq, -1)
    fd = -(plus - minus) / (2 * steps[None, :, None, None])
    return fd[:, 0], fd[:, 1]


def _compare(model, qs, r, atol, max_left_out):
    fd, fd10 = _differences(model, qs)
    moved, spans = _check_spans(model, fd)
    smooth = np.isfinite(fd) & (np.abs(fd - fd10) < 1e-7)
    err = np.where(smooth, np.abs(r - fd), 0.0)
    print(f"\n{len(qs)} poses: max |R - FD| {err.max():.2e} over {smooth.sum()} entries, "
          f"{(~smooth).sum()} at switches left out")
    assert np.mean(~smooth) <= max_left_out
    assert np.abs(fd[smooth]).max() > 0.01
    np.testing.assert_allclose(np.where(smooth, r, 0.0), np.where(smooth, fd, 0.0), rtol=0, atol=atol)
    return moved, spans


def _check_spans(model, fd):
    """The static spans (the coordinates a wrapped path's JVP runs for) cover every coordinate whose
    difference quotient is not zero; outside them the differences vanish (rigid motions)."""
    rows = np.asarray(get_paths(model).wraps.muscles)
    spans = wrapped_coordinate_spans(model)
    moved = np.nanmax(np.abs(fd[:, :, rows]), axis=0) > 1e-9  # (nq, rows)
    for r, span in enumerate(spans):
        outside = np.setdiff1d(np.nonzero(moved[:, r])[0], span)
        assert outside.size == 0, f"{get_paths(model).names[rows[r]]}: coordinates {outside} move it, span {span}"
    return moved, spans


def test_arm26_moment_arms_equal_differences_of_lengths():
    """arm26 (cylinders and ellipsoids): 131 random poses (notebook 05's batch shape, so the suite
    compiles these programs once), every entry."""
    model = mbjax.models.load("arm26")
    qs = _poses(model, 131, 11)
    r = np.asarray(jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    moved, spans = _compare(model, qs, r, 1e-8, 0.0)
    assert [tuple(np.nonzero(m)[0]) for m in moved.T] == list(spans)  # tight on arm26: TRIlong and BIClong span both


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(path)


@pytest.mark.extended  # MoBL, Rajagopal: minutes of compilation (lengths, moment arms, reverse mode)
@pytest.mark.parametrize("path", [pytest.param(MOBL, marks=needs_mobl, id="mobl"),
                                  pytest.param(RAJAGOPAL, marks=needs_rajagopal, id="rajagopal")])
def test_library_moment_arms_forward_and_reverse_equal_differences(path):
    """Full MoBL (cylinders, spheres, ellipsoids, tori) and Rajagopal2016: 16 random poses forward,
    one reverse."""
    model = _load(path)
    qs = _poses(model, 16, 0)
    r = np.asarray(jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    _compare(model, qs, r, 1e-7, 0.01)
    rev = -np.asarray(jax.jit(jax.jacrev(lambda x: muscle_lengths(model, x)))(jnp.asarray(qs[0]))).T
    _compare(model, qs[:1], rev[None], 1e-7, 0.01)
