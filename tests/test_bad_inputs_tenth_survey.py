"""Findings of the tenth outside survey (the Python API and the data files), each now refused naming
the problem, answered as documented, or advised rightly; checked against independent values (the
shoelace area, IEEE division, the straight segment)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.forces import compile_expression
from mbjax.ligaments import triangulate
from mbjax.maps import NaturalCubicSpline
from mbjax.wrapping.smooth import cylinder_geodesic_length, sphere_geodesic_length


def test_expression_divides_by_zero_as_ieee_with_python_numbers_too():
    f = compile_expression("1/q - 2*qdot")
    assert float(f(q=0.0, qdot=1.0)) == np.inf == float(f(q=jnp.asarray(0.0), qdot=jnp.asarray(1.0)))
    assert float(compile_expression("-1/q")(q=0.0)) == -np.inf
    assert float(f(q=4, qdot=0.5)) == 0.25 - 1.0


@pytest.mark.parametrize("polygon, edges", [
    ([[0, 0], [1, 1], [1, 0], [0, 1]], "edge 0-1 meets edge 2-3"),  # a bow tie (signed area 0)
    ([[0, 0], [2, 0], [0, 1], [2, 1.2], [1, -0.5]], "edge 0-1 meets edge"),  # a self-crossing pentagon
])
def test_triangulate_refuses_a_polygon_that_crosses_itself(polygon, edges):
    with pytest.raises(ValueError, match=rf"triangulate: the polygon crosses itself \({edges}.*simple polygon"):
        triangulate(np.asarray(polygon, float), 30)


def test_triangulate_meshes_a_simple_non_convex_polygon_exactly():
    poly = np.array([[0, 0], [2, 0], [2, 2], [1, 0.5], [0, 2.]])
    x, y = poly[:, 0], poly[:, 1]
    shoelace = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    mesh = triangulate(poly, 40)
    p = np.asarray(mesh.vertices)[np.asarray(mesh.triangles)]
    areas = 0.5 * np.abs(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]))
    assert abs(areas.sum() - shoelace) < 1e-12


def test_geodesic_with_an_end_inside_is_the_straight_segment_as_documented():
    p1, p2 = jnp.array([0.2, 0.0, 0.0]), jnp.array([0.0, 2.0, 1.5])
    for length, wraps in (sphere_geodesic_length(p1, p2, 0.5), cylinder_geodesic_length(p1, p2, 0.5)):
        assert not bool(wraps) and abs(float(length) - float(jnp.linalg.norm(p2 - p1))) < 1e-15
    assert "inside" in sphere_geodesic_length.__doc__ and "inside" in cylinder_geodesic_length.__doc__


def test_simulate_muscles_names_activation0_out_of_range():
    arm = mbjax.models.arm26(ignore_wrapping=True)
    with pytest.raises(ValueError, match=r"simulate_muscles: activation0 must be in \[0, 1\]; muscle 'TRIlat' has "
                                         r"1\.5"):
        mbjax.simulate_muscles(arm, jnp.array([0.3, 0.8]), jnp.zeros(2), 0.0, 0.01,
                               excitations=mbjax.ConstantExcitation(jnp.full(6, 0.3)),
                               activation0=jnp.array([0.1, 1.5, 0.2, 0.2, 0.2, 0.2]))
    with pytest.raises(ValueError, match=r"simulate_muscles: initial activation is not finite: activation0 of muscle "
                                         r"'TRImed' is nan"):
        mbjax.simulate_muscles(arm, jnp.array([0.3, 0.8]), jnp.zeros(2), 0.0, 0.01,
                               excitations=mbjax.ConstantExcitation(jnp.full(6, 0.3)),
                               activation0=jnp.array([0.1, 0.5, jnp.nan, 0.2, 0.2, 0.2]))


def test_a_map_outside_its_range_names_its_coordinate():
    x = np.linspace(-1.5, 2.5, 41)
    elbow = NaturalCubicSpline.fit("elbow", x, x + 0.2 * np.sin(2 * x))
    with pytest.raises(eqx.EquinoxRuntimeError, match=r"NaturalCubicSpline of 'elbow': coordinate outside the fitted "
                                                      r"range.*throw=False"):
        jax.block_until_ready(elbow.value(jnp.array([[3.0]])))
    assert abs(float(elbow.value(jnp.array([[1.0]]))[0]) - (1.0 + 0.2 * np.sin(2.0))) < 1e-12


def test_average_frames_refuses_what_it_cannot_average():
    from mbjax.analysis.identify import average_frames
    from mbjax.io import MarkerData

    data = MarkerData(np.arange(5) / 10.0, ("a", "b"), np.arange(30, dtype=float).reshape(5, 2, 3))
    np.testing.assert_allclose(average_frames(data, (0.1, 0.3)), data.positions[1:4].mean(0))  # the valid call
    with pytest.raises(ValueError, match=r"average_frames: max_movement must be a finite distance .*got nan"):
        average_frames(data, (0.1, 0.3), float("nan"))
    with pytest.raises(ValueError, match=r"average_frames: time_range must be two times \(start, end\) in s, got 0\.2"):
        average_frames(data, 0.2)
    with pytest.raises(ValueError, match=r"time range start 0\.3 is past its end 0\.1"):
        average_frames(data, (0.3, 0.1))
    with pytest.raises(TypeError, match=r"average_frames: data must be marker data .*got ndarray"):
        average_frames(data.positions, (0.1, 0.3))
