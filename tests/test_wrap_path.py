"""The wrap pass on whole paths (:mod:`mbjax.wrapping.path`), checked without OpenSim.

A string from a ground point around a cylinder centred on a hinge to a point on the link has a
closed-form length (two tangents and an arc) and moment arm (minus the radius); the loaders read
wrap objects as the files define them; lengths jit once and vmap; moment arms equal differences
of the lengths.  OpenSim itself is the oracle in ``tests/validation/test_wrapping_opensim.py``.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.muscles import PathPoint, moment_arms, muscle_lengths, with_muscles
from mbjax.muscles.paths import build_paths, get_paths
from mbjax.wrapping import PathWrap, WrapObject
from mbjax.wrapping.objects import quadrant_axis_sign, xyz_body_fixed

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import ARM26, needs_arm26  # noqa: E402

R, A, C = 0.05, 0.3, 0.2


def _hinge_model(on="ground", rotation=(0.0, 0.0, 0.7), translation=(0.0, 0.0, 0.01)):
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    cyl = WrapObject("cyl", "WrapCylinder", on, (R, 0.1, 0.0), xyz_body_fixed(rotation), translation)
    paths = build_paths(
        model.body_names, model.coordinate_names,
        {"m": [PathPoint("ground", [A, 0.0, 0.0]), PathPoint("link", [C, 0.0, 0.0])]},
        wrap_objects=[cyl], path_wraps={"m": [PathWrap("cyl")]},
    )
    return with_muscles(model, paths)


def _closed_form(theta):
    onset = np.arccos(R / A) + np.arccos(R / C)
    straight = np.sqrt(A**2 + C**2 - 2 * A * C * np.cos(theta))
    wrapped = np.sqrt(A**2 - R**2) + np.sqrt(C**2 - R**2) + R * (theta - onset)
    return np.where(theta > onset, wrapped, straight), onset


def test_string_around_a_hinge_cylinder_has_closed_form_length_and_moment_arm():
    model = _hinge_model("link")  # the cylinder turns with the link: its frame moves
    thetas = np.linspace(2.0, 3.1, 23)
    lengths = jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(thetas[:, None]))
    expected, onset = _closed_form(thetas)
    np.testing.assert_allclose(np.asarray(lengths)[:, 0], expected, atol=1e-14)
    arms = jax.vmap(moment_arms, in_axes=(None, 0))(model, jnp.asarray(thetas[:, None]))
    wrapped = thetas > onset + 1e-3
    np.testing.assert_allclose(np.asarray(arms)[wrapped, 0, 0], -R, atol=1e-13)
    # unwrapped: the straight-line moment arm -A C sinθ / L
    straight = ~wrapped & (thetas < onset - 1e-3)
    np.testing.assert_allclose(np.asarray(arms)[straight, 0, 0],
                               -A * C * np.sin(thetas[straight]) / expected[straight], atol=1e-13)
    # the length is C1 across the tangential contact: the two one-sided slopes meet
    h = 1e-6
    lo, hi = (float(muscle_lengths(model, jnp.asarray([onset + s]))[0]) for s in (-h, h))
    mid = float(muscle_lengths(model, jnp.asarray([onset]))[0])
    assert abs((hi - mid) / h - (mid - lo) / h) < 1e-4


def test_moment_arms_are_differences_of_lengths_and_compile_once():
    model = _hinge_model("link")
    traces = []

    @jax.jit
    def lengths(q):
        traces.append(1)
        return jax.vmap(muscle_lengths, in_axes=(None, 0))(model, q)

    thetas = jnp.asarray(np.linspace(2.8, 3.05, 6)[:, None])
    lengths(thetas)
    lengths(thetas + 0.01)
    assert len(traces) == 1
    h = 1e-5
    fd = (lengths(thetas + h) - lengths(thetas - h)) / (2 * h)
    arms = jax.vmap(moment_arms, in_axes=(None, 0))(model, thetas)
    np.testing.assert_allclose(np.asarray(arms)[:, 0, 0], -np.asarray(fd)[:, 0], atol=1e-9)
    # one pose at a time equals the batch
    one = np.array([muscle_lengths(model, t)[0] for t in thetas])
    np.testing.assert_allclose(one, np.asarray(lengths(thetas))[:, 0], atol=1e-15)


def test_quadrants_and_objects_refuse_bad_input():
    assert quadrant_axis_sign("-Y") == (1, -1) and quadrant_axis_sign("all") == (0, 0)
    with pytest.raises(ValueError, match="quadrant"):
        quadrant_axis_sign("xy")
    with pytest.raises(ValueError, match="positive"):
        WrapObject("c", "WrapCylinder", "ground", (-0.1, 0.1, 0.0))
    with pytest.raises(ValueError, match="inner radius"):
        WrapObject("t", "WrapTorus", "ground", (0.2, 0.1, 0.0))
    with pytest.raises(ValueError, match="kind"):
        WrapObject("c", "WrapCone", "ground", (0.1, 0.1, 0.0))
    with pytest.raises(ValueError, match="method"):
        PathWrap("c", method="spiral")


@needs_arm26
def test_arm26_loads_with_its_wraps():
    model = load_osim(ARM26)
    wraps = get_paths(model).wraps
    assert len(wraps.names) == 4
    assert set(wraps.kinds) == {"WrapCylinder", "WrapEllipsoid"}
    tri = model.muscle_names.index("TRIlong")
    assert wraps.wraps_of(tri) == ("TRI", "TRIlonghh", "TRIlongglen")
    assert model.osim.wrapping_ignored == ()
    with pytest.warns(UserWarning, match="ignore_wrapping=True"):
        straight = load_osim(ARM26, ignore_wrapping=True)
    assert get_paths(straight).wraps is None
    assert straight.osim.wrapping_ignored == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BRA")
