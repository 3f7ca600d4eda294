"""An eighth outside survey of the public Python API: ``vmap`` over no poses, pose derivatives of the
wrong order or of another pose, booleans as indices, ``io.Table`` shapes, ``add_body`` with two offsets,
``Polynomial.fit``'s degree, ``Fourier.fit``'s omega, geodesics from a point on the surface, the
subpackages the API reference lists, and the names the package shows (``dir``, ``__all__``).  The
findings that showed in float32 are run there too, in a process without x64."""

import glob
import json
import os
import re
import subprocess
import sys
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.wrapping as W
from mbjax.io import Table, coordinates_from_table
from mbjax.maps import Fourier, Polynomial
from _trees import two_link_arm

jax.config.update("jax_enable_x64", True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM = two_link_arm()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM26 = mbjax.models.arm26(ignore_wrapping=True)
Q = jnp.array([0.3, 0.7])
QD = jnp.array([0.4, -0.2])
QDD = jnp.array([0.1, 0.5])
P = jnp.zeros(3)


def _each_pose(fn):
    return jax.vmap(fn, in_axes=(None, 0))


# -- 1. vmap over no poses ---------------------------------------------------------------------------


def test_vmap_over_no_poses_gives_empty_results_of_the_right_shape():
    none = jnp.zeros((0, 2))
    assert _each_pose(mbjax.mass_matrix)(ARM, none).shape == (0, 2, 2)
    assert jax.jit(_each_pose(mbjax.mass_matrix))(ARM, none).shape == (0, 2, 2)
    assert _each_pose(mbjax.moment_arms)(ARM26, none).shape == (0, 2, 6)
    assert _each_pose(mbjax.muscle_lengths)(ARM26, none).shape == (0, 6)
    r, lengths = mbjax.muscles.opensim_moment_arms_and_lengths(ARM26, none)
    assert r.shape == (0, 2, 6) and lengths.shape == (0, 6)
    assert mbjax.muscles.moment_arms_batched(ARM26, none, batch_size=4).shape == (0, 2, 6)


def test_a_batch_with_a_nan_pose_is_still_refused():
    qs = jnp.array([[0.1, 0.2], [jnp.nan, 0.0], [0.3, 0.4]])
    with pytest.raises(RuntimeError, match=r"q contains NaN or inf for coordinates \('shoulder', 'elbow'\)"):
        _each_pose(mbjax.mass_matrix)(ARM, qs)
    with pytest.raises(RuntimeError, match=r"q contains NaN or inf for coordinates \('r_shoulder_elev'"):
        _each_pose(mbjax.moment_arms)(ARM26, qs)


def test_a_batched_check_names_the_first_rule_that_fails_in_any_pose():
    from mbjax import _checks

    def check(x):
        return _checks.all_of(x, [(x[0] < 0, "rule zero"), (x[1] < 0, "rule one"), (x[2] < 0, "rule two")])

    checked = eqx.filter_jit(jax.vmap(check))
    np.testing.assert_array_equal(checked(jnp.ones((0, 3))), np.ones((0, 3)))
    np.testing.assert_array_equal(checked(jnp.ones((2, 3))), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="rule one"):  # pose 0 breaks rule two, pose 1 rule one
        checked(jnp.array([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0]]))
    with pytest.raises(RuntimeError, match="rule two"):
        checked(jnp.array([[1.0, 1.0, 1.0], [1.0, 1.0, -1.0]]))


# -- 2. point_acceleration with first derivatives only -----------------------------------------------


def test_point_acceleration_refuses_first_order_derivs_naming_order_2():
    d1 = mbjax.pose_derivatives(ARM, Q, order=1)
    with pytest.raises(ValueError, match=r"point_acceleration: derivs has no second derivatives \(dd_pose is None\)"
                                         r": give derivs=pose_derivatives\(model, q, order=2\)"):
        mbjax.point_acceleration(ARM, Q, QD, QDD, 1, P, derivs=d1)
    np.testing.assert_allclose(mbjax.point_velocity(ARM, Q, QD, 1, P, derivs=d1), mbjax.point_velocity(ARM, Q, QD, 1, P))
    with pytest.raises(TypeError, match=r"point_velocity: derivs must be the PoseDerivatives of "
                                        r"pose_derivatives\(model, q\), got tuple"):
        mbjax.point_velocity(ARM, Q, QD, 1, P, derivs=tuple(d1))


# -- 3. io.Table shapes -------------------------------------------------------------------------------


def test_table_refuses_a_time_per_row_mismatch():
    with pytest.raises(ValueError, match=r"Table: time has 3 entries but data has 2 rows \(data shape \(2, 2\)\)"):
        Table(np.array([0.0, 1.0, 2.0]), ("shoulder", "elbow"), np.ones((2, 2)))


def test_table_refuses_a_label_per_column_mismatch():
    with pytest.raises(ValueError, match=r"Table: 2 labels for 1 data columns \(data has shape \(1, 1\); labels "
                                         r"exclude the time column\)"):
        Table(np.array([0.0]), ("shoulder", "elbow"), np.array([[1.0]]))
    with pytest.raises(ValueError, match=r"Table: data must be 2-D \(T, n\), got shape \(2,\)"):
        Table(np.zeros(2), ("shoulder",), np.ones(2))
    with pytest.raises(ValueError, match=r"Table: labels must be a tuple of column labels, got the string 'ab'"):
        Table(np.zeros(2), "ab", np.ones((2, 2)))


def test_table_checks_replace_and_keeps_a_good_table():
    table = Table(np.array([0.0, 0.1]), ("shoulder", "elbow"), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"Table: 1 labels for 2 data columns"):
        table._replace(labels=("shoulder",))
    np.testing.assert_array_equal(coordinates_from_table(ARM, table), np.ones((2, 2)))
    assert table._replace(in_degrees=True).in_degrees is True
    assert table.metadata is None and table.in_degrees is False


# -- 4. derivs of another pose ------------------------------------------------------------------------


def test_point_velocity_and_acceleration_refuse_derivs_of_another_pose():
    other = mbjax.pose_derivatives(ARM, jnp.zeros(2))
    with pytest.raises(ValueError, match=r"point_velocity: derivs were computed at another pose than q: give "
                                         r"derivs=pose_derivatives\(model, q\) of this q, or derivs=None; "
                                         r"derivs.q = \[0.0, 0.0\], q = \[0.3, 0.7\]"):
        mbjax.point_velocity(ARM, Q, QD, 1, P, derivs=other)
    with pytest.raises(ValueError, match=r"point_acceleration: derivs were computed at another pose than q"):
        mbjax.point_acceleration(ARM, Q, QD, QDD, 1, P, derivs=other)


def test_derivs_of_the_same_pose_give_the_same_answer():
    own = mbjax.pose_derivatives(ARM, Q)
    np.testing.assert_allclose(mbjax.point_velocity(ARM, Q, QD, 1, P, derivs=own), mbjax.point_velocity(ARM, Q, QD, 1, P))
    np.testing.assert_allclose(mbjax.point_acceleration(ARM, Q, QD, QDD, 1, P, derivs=own),
                               mbjax.point_acceleration(ARM, Q, QD, QDD, 1, P))
    np.testing.assert_allclose(mbjax.point_velocity(ARM, [0.3, 0.7], QD, 1, P, derivs=own),
                               mbjax.point_velocity(ARM, Q, QD, 1, P))


def test_derivs_of_another_pose_are_refused_at_run_time_under_jit():
    @eqx.filter_jit
    def velocity(q, derivs):
        return mbjax.point_velocity(ARM, q, QD, 1, P, derivs=derivs)

    np.testing.assert_allclose(velocity(Q, mbjax.pose_derivatives(ARM, Q)), mbjax.point_velocity(ARM, Q, QD, 1, P))
    with pytest.raises(RuntimeError, match=r"point_velocity: derivs were computed at another pose than q"):
        velocity(Q, mbjax.pose_derivatives(ARM, jnp.zeros(2)))
    each = jax.jit(jax.vmap(lambda q: mbjax.point_acceleration(ARM, q, QD, QDD, 1, P,
                                                               derivs=mbjax.pose_derivatives(ARM, q))))
    assert each(jnp.ones((3, 2))).shape == (3, 3)


# -- 5. booleans as indices ---------------------------------------------------------------------------


@pytest.mark.parametrize("flag", [True, np.bool_(True)])
def test_a_bool_body_index_is_refused(flag):
    with pytest.raises(ValueError, match=r"body must be a name \(str\) or an int index 0..1, got the bool True; "
                                         r"bodies are \('upper_arm', 'forearm'\)"):
        mbjax.point_positions(ARM, Q, flag, P)
    with pytest.raises(ValueError, match=r"got the bool True"):
        mbjax.point_velocity(ARM, Q, QD, flag, P)
    with pytest.raises(ValueError, match=r"coordinate must be a name \(str\) or an int index, got the bool True"):
        ARM.coordinate_index(flag)


def test_a_bool_order_is_refused_even_after_order_1_was_compiled():
    assert mbjax.pose_derivatives(ARM, Q, order=1).dd_pose is None  # True == 1: the same cache key before
    with pytest.raises(ValueError, match=r"pose_derivatives: order must be 1 or 2 .*, got True"):
        mbjax.pose_derivatives(ARM, Q, order=True)
    with pytest.raises(ValueError, match=r"pose_derivatives: order must be 1 or 2 .*, got True"):
        mbjax.pose_derivatives(ARM, Q, order=np.bool_(True))


def test_a_bool_body_is_refused_even_after_body_1_was_compiled():
    mbjax.point_positions(ARM, Q, 1, P)
    with pytest.raises(ValueError, match=r"got the bool True"):
        mbjax.point_positions(ARM, Q, True, P)


def test_a_numpy_int_body_index_is_taken_as_an_int():
    np.testing.assert_array_equal(mbjax.point_positions(ARM, Q, np.int64(1), P), mbjax.point_positions(ARM, Q, 1, P))
    with pytest.raises(ValueError, match=r"got an array of dtype int\d+ \(an array or a traced value; give a Python "
                                         r"int or a name\)"):
        mbjax.point_positions(ARM, Q, jnp.asarray(1), P)


# -- 6. add_body with offset and rotation/translation -------------------------------------------------

RZ = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("extra, named", [
    (dict(rotation=RZ, translation=[1, 0, 0]), "rotation and translation"),
    (dict(rotation=RZ), "rotation"),
    (dict(translation=[1, 0, 0]), "translation"),
])
def test_add_body_refuses_offset_with_rotation_or_translation(extra, named):
    builder = mbjax.ModelBuilder(["a"])
    with pytest.raises(ValueError, match=rf"body 'x': give the offset either as offset \(4x4\) or as rotation and "
                                         rf"translation, not both: got offset and {named}$"):
        builder.add_body("x", map="a", mass=1.0, inertia=np.eye(3), offset=np.eye(4), **extra)


def test_add_body_takes_offset_alone_or_rotation_and_translation():
    offset = np.eye(4)
    offset[:3, :3], offset[:3, 3] = RZ, [1, 0, 0]
    by_offset = mbjax.ModelBuilder(["a"]).add_body("x", map="a", mass=1.0, inertia=np.eye(3), offset=offset).build()
    by_parts = mbjax.ModelBuilder(["a"]).add_body("x", map="a", mass=1.0, inertia=np.eye(3), rotation=RZ,
                                                  translation=[1, 0, 0]).build()
    np.testing.assert_array_equal(by_offset.offset, by_parts.offset)


# -- 7. Polynomial.fit's degree -----------------------------------------------------------------------

X = np.linspace(-1.0, 1.0, 21)


@pytest.mark.parametrize("degree", [2.5, 2.0, -1, True, np.array(2)])
def test_polynomial_fit_needs_a_non_negative_int_degree(degree):
    with pytest.raises(ValueError, match=r"Polynomial.fit: degree must be a non-negative integer, got "):
        Polynomial.fit(("a",), X, X**3, degree)


def test_polynomial_fit_takes_an_int_degree():
    assert Polynomial.fit(("a",), X, X**3, np.int64(3)).exponents == (((0,), (1,), (2,), (3,)),)


@pytest.mark.parametrize("n", [1.5, -1, True])
def test_fourier_fit_needs_a_non_negative_int_number_of_harmonics(n):
    with pytest.raises(ValueError, match=r"Fourier.fit: n_harmonics must be a non-negative integer, got "):
        Fourier.fit("a", X, np.sin(X), n, omega=1.0)


# -- 8. Fourier.fit's omega ---------------------------------------------------------------------------


@pytest.mark.parametrize("omega", [np.nan, np.inf, -np.inf, 0.0, -1.0, "fast", np.ones(2)])
def test_fourier_fit_refuses_a_bad_omega_by_name_without_lapack_noise(omega, capfd):
    with pytest.raises(ValueError, match=r"Fourier.fit: omega \(the base frequency\) must be one finite number > 0, "
                                         r"got "):
        Fourier.fit("a", X, np.sin(X), 2, omega=omega)
    assert "DLASCL" not in capfd.readouterr().err


def test_fourier_fit_takes_a_finite_omega():
    fit = Fourier.fit("a", X, np.sin(2 * X), 1, omega=2)
    np.testing.assert_allclose(np.asarray(fit.b), [[1.0]], atol=1e-12)


# -- 9. geodesics from a point on the surface ---------------------------------------------------------


@pytest.mark.parametrize("radius", [1.0, 2.5])
def test_sphere_geodesic_between_antipodal_points_on_the_surface_is_half_a_great_circle(radius):
    for scale in (1.0, 1.0 + 1e-12):
        p = jnp.array([radius * scale, 0.0, 0.0])
        length, wraps = W.sphere_geodesic_length(p, -p, radius)
        assert bool(wraps)
        np.testing.assert_allclose(length, np.pi * radius, rtol=1e-9)
        np.testing.assert_allclose(W.sphere_geodesic(p, -p, radius).length, np.pi * radius, rtol=1e-9)


def test_sphere_geodesic_from_a_point_on_the_surface_matches_the_closed_form():
    r, b = 1.5, 4.0  # p1 on the surface, p2 at distance b, a right angle apart: the arc is R (π/2 − acos(R/b))
    p1, p2 = jnp.array([r, 0.0, 0.0]), jnp.array([0.0, b, 0.0])
    expected = np.sqrt(b * b - r * r) + r * (np.pi / 2 - np.arccos(r / b))
    length, wraps = W.sphere_geodesic_length(p1, p2, r)
    assert bool(wraps)
    np.testing.assert_allclose(length, expected, rtol=1e-12)
    np.testing.assert_allclose(W.sphere_geodesic_length(p1 * (1 + 1e-12), p2, r)[0], expected, rtol=1e-9)
    grad = jax.grad(lambda p: W.sphere_geodesic_length(p, p2, r)[0])(p1)
    assert np.all(np.isfinite(grad))


def test_cylinder_geodesic_from_points_on_the_surface_matches_the_closed_form():
    r, dz = 1.0, 2.0  # the developed path: a straight line over half the circumference and dz
    for scale in (1.0, 1.0 + 1e-12):
        p1, p2 = jnp.array([r * scale, 0.0, 0.0]), jnp.array([-r * scale, 0.0, dz])
        length, wraps = W.cylinder_geodesic_length(p1, p2, r)
        assert bool(wraps)
        np.testing.assert_allclose(length, np.hypot(np.pi * r, dz), rtol=1e-9)
        np.testing.assert_allclose(W.cylinder_geodesic(p1, p2, r).length, np.hypot(np.pi * r, dz), rtol=1e-9)
    grad = jax.grad(lambda p: W.cylinder_geodesic_length(p, jnp.array([-r, 0.0, dz]), r)[0])(jnp.array([r, 0.0, 0.0]))
    assert np.all(np.isfinite(grad))


def test_a_point_inside_keeps_the_straight_segment():
    p1, p2 = jnp.array([0.5, 0.0, 0.0]), jnp.array([-1.0, 0.0, 0.0])
    length, wraps = W.sphere_geodesic_length(p1, p2, 1.0)
    assert not bool(wraps) and float(length) == 1.5
    length, wraps = W.cylinder_geodesic_length(p1, p2, 1.0)
    assert not bool(wraps) and float(length) == 1.5


# -- 10. the subpackages the API reference lists -----------------------------------------------------


def _documented_subpackages():
    import importlib.util

    names = set()
    for page in glob.glob(os.path.join(ROOT, "docs", "reference", "*.md")):
        with open(page, encoding="utf-8") as f:
            names |= set(re.findall(r"\bmbjax\.([A-Za-z_]\w*)", f.read()))
    return sorted(n for n in names if not n.startswith("_") and importlib.util.find_spec(f"mbjax.{n}") is not None)


def test_every_documented_subpackage_is_an_attribute_after_import_mbjax():
    names = _documented_subpackages()
    assert {"wrapping", "reactions", "muscles", "io", "maps"} <= set(names)
    script = (
        "import json, sys, warnings\n"
        "import mbjax\n"
        f"names = {names!r}\n"
        "reachable = set(vars(mbjax)) | set(mbjax._EXPORTS) | set(mbjax._MOVED_MODULES)\n"
        "missing = [n for n in names if n not in reachable]\n"  # before any attribute imports a subpackage
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', DeprecationWarning)\n"
        "    wrong = [n for n in names if getattr(mbjax, n).__name__.rpartition('.')[2] != n.rpartition('.')[2]]\n"
        "print(json.dumps([missing, wrong, [n for n in names if n not in dir(mbjax)]]))\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    missing, wrong, undir = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not missing, f"documented subpackages that are no attribute of mbjax after `import mbjax`: {missing}"
    assert not wrong, f"mbjax.<name> is not the subpackage <name>: {wrong}"
    assert not undir, f"documented subpackages missing from dir(mbjax): {undir}"


# -- notes: batch_size, dir() and __all__ -------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1.5, 0, True])
def test_moment_arms_batched_needs_a_positive_int_batch_size(batch_size):
    with pytest.raises(ValueError, match=r"moment_arms_batched: batch_size must be a positive integer or None, got "):
        mbjax.muscles.moment_arms_batched(ARM26, jnp.zeros((3, 2)), batch_size=batch_size)


def test_dir_lists_no_module_imports():
    import mbjax.io

    for module in (mbjax, mbjax.io):
        shown = dir(module)
        assert "annotations" not in shown and "importlib" not in shown, module.__name__
        assert set(module.__all__) <= set(shown)


def test_markers_declares_its_public_names():
    import mbjax.markers

    assert mbjax.markers.__all__ == ["Markers", "marker_positions", "marker_positions_and_jacobian"]
    assert not {"jax", "jnp", "np", "eqx"} & set(mbjax.markers.__all__)
    for name in mbjax.markers.__all__:
        assert getattr(mbjax.markers, name) is not None


# -- the findings that showed in float32 --------------------------------------------------------------

_FLOAT32_SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
import mbjax
import mbjax.wrapping as W
from mbjax.maps import Fourier, Polynomial
from _trees import two_link_arm

assert not jax.config.jax_enable_x64
arm = two_link_arm()
q, qd = jnp.array([0.3, 0.7]), jnp.array([0.4, -0.2])
out = {}
m = jax.vmap(mbjax.mass_matrix, in_axes=(None, 0))(arm, jnp.zeros((0, 2)))
out["empty"] = [list(m.shape), str(m.dtype)]

def message(f):
    try:
        f()
    except Exception as e:
        return str(e).splitlines()[0]
    return None

d1 = mbjax.pose_derivatives(arm, q, order=1)
out["order1"] = message(lambda: mbjax.point_acceleration(arm, q, qd, qd, 1, jnp.zeros(3), derivs=d1))
out["stale"] = message(lambda: mbjax.point_velocity(arm, q, qd, 1, jnp.zeros(3),
                                                    derivs=mbjax.pose_derivatives(arm, jnp.zeros(2))))
out["own"] = message(lambda: mbjax.point_velocity(arm, q, qd, 1, jnp.zeros(3), derivs=mbjax.pose_derivatives(arm, q)))
out["bool"] = message(lambda: mbjax.point_positions(arm, q, True, jnp.zeros(3)))
out["offset"] = message(lambda: mbjax.ModelBuilder(["a"]).add_body("x", map="a", mass=1.0, inertia=np.eye(3),
                                                                   rotation=np.eye(3), offset=np.eye(4)))
x = np.linspace(-1, 1, 21)
out["degree"] = message(lambda: Polynomial.fit(("a",), x, x**3, 2.5))
out["omega"] = message(lambda: Fourier.fit("a", x, np.sin(x), 2, omega=np.nan))
p = jnp.array([1.0, 0.0, 0.0], jnp.float32)
out["sphere"] = float(W.sphere_geodesic_length(p, -p, 1.0)[0])
out["cylinder"] = float(W.cylinder_geodesic_length(p, -p, 1.0)[0])
print(json.dumps(out))
"""


def test_the_findings_hold_in_float32():
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _FLOAT32_SCRIPT, os.path.join(ROOT, "tests")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DLASCL" not in proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["empty"] == [[0, 2, 2], "float32"]
    assert got["order1"].startswith("point_acceleration: derivs has no second derivatives")
    assert got["stale"].startswith("point_velocity: derivs were computed at another pose than q")
    assert got["own"] is None
    assert "got the bool True" in got["bool"]
    assert "not both: got offset and rotation" in got["offset"]
    assert got["degree"] == "Polynomial.fit: degree must be a non-negative integer, got 2.5"
    assert got["omega"] == "Fourier.fit: omega (the base frequency) must be one finite number > 0, got nan"
    np.testing.assert_allclose([got["sphere"], got["cylinder"]], np.pi, rtol=1e-6)
