"""No silent wrong answers: each class of bad input, fed to each public entry point.

Policy (mbjax/_checks.py): shapes and dtypes are refused at trace time with a ``ValueError``
naming the argument and its expected shape with dimension names; NaN/inf and other bad values
raise at run time (``eqx.error_if``, a ``RuntimeError``) while ``mbjax.config.checks`` is on.  Every
refusal here is triggered by the bad input itself; the valid twin of each call is checked
against an independent route where it defines a value (finite differences, NumPy, float64).
"""

import os
import subprocess
import sys
import textwrap

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.ligaments as lig
from mbjax.maps import NaturalCubicSpline
from mbjax.muscles.paths import ConditionalPathPoint, PathPoint, with_muscles

NQ = 2
# eagerly eqx.error_if raises EquinoxRuntimeError; under jax.jit the runtime error surfaces
# through the host callback (a RuntimeError or, on some paths, a ValueError holding the message)
JIT_ERROR = (RuntimeError, ValueError)


def _arm(mass2=1.2):
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=2.0,
               com=[0, -0.15, 0], inertia=np.diag([0.01, 0.002, 0.01]))
    b.add_body("forearm", parent="upper_arm", joint="revolute", axis=[0, 0, 1], translation=[0.01, -0.3, 0.02],
               map="elbow", mass=mass2, com=[0, -0.12, 0], inertia=np.diag([0.01, 0.002, 0.01]) if mass2 else None)
    return b.build()


ARM = _arm()
MUSCLED = with_muscles(ARM, {"m": [PathPoint("ground", [0, 0.05, 0]), PathPoint("forearm", [0.02, -0.05, 0.01])]})
FIBRES = lig.FibreSet(jnp.zeros((2, 3)), jnp.ones((2, 3)), jnp.ones(2), jnp.ones(2), jnp.ones(2))
EYE4 = jnp.eye(4)


def _z():
    return jnp.full(NQ, 0.1)


# public entry points taking (nq,) vectors: name -> (call, names of its vector arguments)
ENTRY = {
    "joint_values": (lambda q: mbjax.joint_values(ARM, q), ("q",)),
    "joint_variables": (lambda q: mbjax.joint_variables(ARM, q), ("q",)),
    "body_poses": (lambda q: mbjax.body_poses(ARM, q), ("q",)),
    "kinematics": (lambda q, qd, qdd: mbjax.kinematics(ARM, q, qd, qdd), ("q", "qd", "qdd")),
    "body_kinematics": (lambda q, qd, qdd: mbjax.body_kinematics(ARM, q, qd, qdd), ("q", "qd", "qdd")),
    "pose_derivatives": (lambda q: mbjax.pose_derivatives(ARM, q), ("q",)),
    "body_jacobians": (lambda q: mbjax.body_jacobians(ARM, q), ("q",)),
    "point_positions": (lambda q: mbjax.point_positions(ARM, q, "forearm", jnp.ones(3)), ("q",)),
    "point_velocity": (lambda q, qd: mbjax.point_velocity(ARM, q, qd, "forearm", jnp.ones(3)), ("q", "qd")),
    "virtual_displacement": (lambda q, dq: mbjax.reference.virtual_displacement(ARM, q, dq, "forearm", jnp.ones(3)),
                             ("q", "dq")),
    "point_acceleration": (
        lambda q, qd, qdd: mbjax.point_acceleration(ARM, q, qd, qdd, "forearm", jnp.ones(3)), ("q", "qd", "qdd")),
    "mass_matrix": (lambda q: mbjax.mass_matrix(ARM, q), ("q",)),
    "bias_forces": (lambda q, qd: mbjax.bias_forces(ARM, q, qd), ("q", "qd")),
    "gravity_forces": (lambda q: mbjax.gravity_forces(ARM, q), ("q",)),
    "inverse_dynamics": (lambda q, qd, qdd, ext: mbjax.inverse_dynamics(ARM, q, qd, qdd, ext),
                         ("q", "qd", "qdd", "external")),
    "forward_dynamics": (lambda q, qd, tau: mbjax.forward_dynamics(ARM, q, qd, tau), ("q", "qd", "tau")),
    "generalized_forces": (lambda q: mbjax.generalized_forces(ARM, q, "forearm", jnp.ones(3), jnp.ones(3)), ("q",)),
    "body_wrench_forces": (lambda q: mbjax.body_wrench_forces(ARM, q, jnp.ones((2, 6))), ("q",)),
    "kinetic_energy": (lambda q, qd: mbjax.kinetic_energy(ARM, q, qd), ("q", "qd")),
    "potential_energy": (lambda q: mbjax.potential_energy(ARM, q), ("q",)),
    "total_energy": (lambda q, qd: mbjax.total_energy(ARM, q, qd), ("q", "qd")),
    "mass_matrix_kron": (lambda q: mbjax.reference.mass_matrix_kron(ARM, q), ("q",)),
    "bias_forces_kron": (lambda q, qd: mbjax.reference.bias_forces_kron(ARM, q, qd), ("q", "qd")),
    "muscle_lengths": (lambda q: mbjax.muscle_lengths(MUSCLED, q), ("q",)),
    "moment_arms": (lambda q: mbjax.moment_arms(MUSCLED, q), ("q",)),
    "path_points": (lambda q: mbjax.muscles.path_points(MUSCLED, q), ("q",)),
    "joint_reactions": (lambda q, qd, qdd: mbjax.joint_reactions(ARM, q, qd, qdd), ("q", "qd", "qdd")),
}
CASES = [(fn, arg) for fn, (_, args) in ENTRY.items() for arg in args]


def _call(fn, bad_arg=None, value=None):
    call, args = ENTRY[fn]
    vals = [value if a == bad_arg else _z() for a in args]
    return call(*vals)


@pytest.mark.parametrize("fn", list(ENTRY))
def test_valid_call_is_finite(fn):
    out = _call(fn)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(out) if np.size(x))


@pytest.mark.parametrize("fn, arg", CASES)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_argument_raises(fn, arg, bad):
    x = _z().at[0].set(bad)
    with pytest.raises(RuntimeError, match=f"{arg} contains NaN or inf"):
        _call(fn, arg, x)


@pytest.mark.parametrize("fn, arg", CASES)
@pytest.mark.parametrize("shape", [(1,), (NQ + 1,), (NQ, 1), ()])
def test_wrong_shape_names_argument_and_dimension(fn, arg, shape):
    with pytest.raises(ValueError, match=rf"{arg} must have shape \(nq,\) = \(2,\)"):
        _call(fn, arg, jnp.zeros(shape))


@pytest.mark.parametrize("fn, arg", CASES[::3])
@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.bool_])
def test_non_real_dtype_refused(fn, arg, dtype):
    with pytest.raises(ValueError, match=f"{arg} must be a real"):
        _call(fn, arg, jnp.zeros(NQ, dtype))


def test_errors_under_jit_and_vmap():
    f = jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))
    qs = jnp.zeros((4, NQ))
    assert np.all(np.isfinite(f(MUSCLED, qs)))
    with pytest.raises(JIT_ERROR, match="q contains NaN or inf"):
        jax.block_until_ready(f(MUSCLED, qs.at[2, 1].set(jnp.nan)))


def test_checks_switch():
    """Off: NaN propagates (IEEE), no error; the setting is restored on exit; on by default."""
    assert mbjax.config.checks_enabled()
    nan_q = jnp.array([jnp.nan, 0.0])
    with mbjax.config.checks(False):
        assert not mbjax.config.checks_enabled()
        assert np.all(np.isnan(mbjax.mass_matrix(ARM, nan_q)))
        assert np.all(np.isnan(mbjax.forward_dynamics(ARM, nan_q, jnp.zeros(2))))
    assert mbjax.config.checks_enabled()
    with pytest.raises(RuntimeError):
        mbjax.mass_matrix(ARM, nan_q)


def test_nan_coordinate_never_gives_muscle_length_zero():
    with pytest.raises(RuntimeError, match="q contains NaN"):
        mbjax.muscle_lengths(MUSCLED, jnp.array([jnp.nan, 0.0]))


def test_tau_does_not_broadcast():
    with pytest.raises(ValueError, match=r"tau must have shape \(nq,\) = \(2,\)"):
        mbjax.forward_dynamics(ARM, _z(), _z(), jnp.array([1.0]))
    with pytest.raises(ValueError, match=r"external must have shape"):
        mbjax.inverse_dynamics(ARM, _z(), _z(), _z(), jnp.array([1.0]))


def test_points_forces_and_wrenches():
    with pytest.raises(ValueError, match=r"points must have shape \(3,\)"):
        mbjax.point_positions(ARM, _z(), "forearm", jnp.ones(2))
    with pytest.raises(ValueError, match=r"points must have shape \(npts, 3\)"):
        mbjax.point_velocity(ARM, _z(), _z(), "forearm", jnp.ones((4, 2)))
    with pytest.raises(RuntimeError, match="points contains NaN"):
        mbjax.point_positions(ARM, _z(), "forearm", jnp.array([0.0, jnp.nan, 0.0]))
    with pytest.raises(RuntimeError, match="forces contains NaN"):
        mbjax.generalized_forces(ARM, _z(), "forearm", jnp.ones(3), jnp.array([jnp.inf, 0, 0]))
    with pytest.raises(ValueError, match=r"wrench must have shape \(nb, 6\) = \(2, 6\)"):
        mbjax.body_wrench_forces(ARM, _z(), jnp.ones((2, 3)))
    with pytest.raises(RuntimeError, match="wrench contains NaN"):
        mbjax.body_wrench_forces(ARM, _z(), jnp.ones((2, 6)).at[1, 1].set(jnp.nan))


# ------------------------------------------------------------------------------------------------
# ligaments, TPS
# ------------------------------------------------------------------------------------------------


def test_ligament_poses_are_4x4_homogeneous():
    ok = lig.ligament_wrench(FIBRES, EYE4, EYE4.at[:3, 3].set(0.1))
    assert ok.shape == (6,) and np.all(np.isfinite(ok))
    for fn in (lig.ligament_wrench, lig.ligament_energy, lig.fibre_state, lig.ligament_stiffness):
        with pytest.raises(ValueError, match=r"pose_b must have shape \(4, 4\)"):
            fn(FIBRES, EYE4, jnp.eye(3))  # 3x3 rotation passed as a pose
        with pytest.raises(ValueError, match=r"pose_a must have shape \(4, 4\)"):
            fn(FIBRES, jnp.eye(4)[:3], EYE4)
    with pytest.raises(RuntimeError, match="last row"):
        lig.ligament_wrench(FIBRES, EYE4, EYE4.at[3, 0].set(1.0))
    with pytest.raises(RuntimeError, match="pose_a"):
        lig.ligament_wrench(FIBRES, EYE4.at[0, 3].set(jnp.nan), EYE4)
    with pytest.raises(ValueError, match=r"pole must have shape \(3,\)"):
        lig.ligament_wrench(FIBRES, EYE4, EYE4, jnp.zeros(2))


def test_fibre_set_refuses_bad_parameters():
    a, b = jnp.zeros((2, 3)), jnp.ones((2, 3))
    with pytest.raises(ValueError, match="stiffness must be >= 0"):
        lig.FibreSet(a, b, jnp.ones(2), jnp.array([-1.0, 1.0]), jnp.ones(2))
    with pytest.raises(ValueError, match="weights"):
        lig.FibreSet(a, b, jnp.array([1.0, -1.0]), jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match="finite"):
        lig.FibreSet(a.at[0, 0].set(jnp.nan), b, jnp.ones(2), jnp.ones(2), jnp.ones(2))


def test_empty_ligament_mesh_raises():
    v = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="no triangles"):
        lig.check_mesh(lig.Mesh(v, np.zeros((0, 3), int)))
    acl = lig.synthetic_acl()
    ligament = acl[0] if isinstance(acl, tuple) else acl
    if isinstance(ligament, lig.TPSMLigament):
        with pytest.raises(ValueError, match="no triangles"):
            lig.discretize(ligament, lig.Mesh(v, np.zeros((0, 3), int)), lig.gauss_rule(3))


def test_tps_batch_equal_to_landmark_count_is_unambiguous():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (6, 2))
    y = rng.normal(size=(6, 2))
    s = lig.fit_tps(x, y, 0.0)
    pts = jnp.asarray(rng.uniform(-1, 1, (6, 2)))  # batch size == number of landmarks
    loop = np.stack([np.asarray(s(p)) for p in pts])
    np.testing.assert_allclose(s(pts), loop, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(jax.vmap(s)(pts), loop, rtol=1e-13, atol=1e-14)
    jac = np.stack([np.asarray(jax.jacfwd(s)(p)) for p in pts])  # autodiff, one point at a time
    np.testing.assert_allclose(s.jacobian(pts), jac, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s(jnp.asarray(x)), y, atol=1e-10)  # λ = 0 interpolates, batch at the landmarks
    with pytest.raises(ValueError, match=r"xy must have shape \(2,\) or \(\.\.\., 2\)"):
        s(jnp.zeros(3))


# ------------------------------------------------------------------------------------------------
# builders, maps, constraints, reactions
# ------------------------------------------------------------------------------------------------


def _build(gravity=(0, -9.81, 0), **kw):
    b = mbjax.ModelBuilder(["a"], gravity=gravity)
    kw.setdefault("mass", 1.0)
    b.add_body("x", map="a", inertia=np.eye(3) * 0.01, **kw)
    return b.build()


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(translation=[np.nan, 0, 0]), "finite"),
        (dict(translation=[0, np.inf, 0]), "finite"),
        (dict(com=[np.nan, 0, 0]), "com must be a finite"),
        (dict(rotation=np.full((3, 3), np.nan)), "finite"),
        (dict(offset=np.eye(4) * np.nan), "finite"),
        (dict(axis=[np.nan, 0, 1]), "axis must be a finite"),
        (dict(mass=np.nan), "mass must be finite"),
        (dict(gravity=[np.nan, 0, 0]), "gravity must be a finite"),
    ],
)
def test_builder_refuses_non_finite(kw, match):
    with pytest.raises(ValueError, match=match):
        _build(**kw)


def test_spline_refuses_nan_knots_and_values():
    with pytest.raises(ValueError, match="finite"):
        NaturalCubicSpline("a", [0.0, np.nan, 2.0], [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        NaturalCubicSpline("a", [0.0, 1.0, 2.0], [0.0, np.nan, 0.0])


def test_molecule_step_zero_raises():
    from mbjax.constraints import molecule_derivatives
    from mbjax.models.fourbar import fourbar_constraint

    con = fourbar_constraint()
    q = jnp.asarray([0.6])
    with pytest.raises(RuntimeError, match="step must be finite and > 0"):
        molecule_derivatives(con, q, 0.0)
    with pytest.raises(RuntimeError, match="step must be finite and > 0"):
        molecule_derivatives(con, q, jnp.asarray(-1e-3))


def test_reaction_spec_for_another_model_refused():
    b = mbjax.ModelBuilder(["a", "b"])
    b.add_body("u", joint="prismatic", axis=[1, 0, 0], map="a", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_body("v", parent="u", map="b", mass=1.0, inertia=np.eye(3) * 0.01)
    spec = mbjax.reaction_spec(b.build())
    with pytest.raises(ValueError, match="built for another model"):
        mbjax.joint_reactions(ARM, _z(), _z(), _z(), joints=spec)


# ------------------------------------------------------------------------------------------------
# singular mass matrix
# ------------------------------------------------------------------------------------------------


def _gimbal():
    """Three revolute axes z, y, x through zero-inertia bodies: at b = π/2 the x axis is ±z (gimbal lock)."""
    b = mbjax.ModelBuilder(["a", "b", "c"], gravity=[0, 0, -9.81])
    b.add_body("r1", axis=[0, 0, 1], map="a")
    b.add_body("r2", parent="r1", axis=[0, 1, 0], map="b")
    b.add_body("r3", parent="r2", axis=[1, 0, 0], map="c", mass=1.0, com=[0.1, 0.2, 0.3],
               inertia=np.diag([0.02, 0.03, 0.04]))
    return b.build()


GIMBAL = _gimbal()


def test_forward_dynamics_refuses_singular_mass_matrix():
    qd, tau = jnp.array([0.1, -0.2, 0.3]), jnp.array([0.5, 1.0, -0.3])
    q = jnp.array([0.1, 0.3, 0.2])  # regular: equals a NumPy solve of M q̈ = τ - (N q̇ - G)
    m = np.asarray(mbjax.mass_matrix(GIMBAL, q))
    rhs = np.asarray(tau - mbjax.bias_forces(GIMBAL, q, qd) + mbjax.gravity_forces(GIMBAL, q))
    np.testing.assert_allclose(mbjax.forward_dynamics(GIMBAL, q, qd, tau), np.linalg.solve(m, rhs), rtol=1e-10)
    lock = jnp.array([0.1, np.pi / 2, 0.2])
    assert np.linalg.eigvalsh(np.asarray(mbjax.mass_matrix(GIMBAL, lock)))[0] < 1e-12  # truly singular
    with pytest.raises(RuntimeError, match="mass matrix M\\(q\\) is singular"):
        mbjax.forward_dynamics(GIMBAL, lock, qd, tau)
    f = jax.jit(jax.vmap(mbjax.forward_dynamics, in_axes=(None, 0, 0, 0)))
    with pytest.raises(JIT_ERROR, match="singular"):
        jax.block_until_ready(f(GIMBAL, jnp.stack([q, lock]), jnp.stack([qd, qd]), jnp.stack([tau, tau])))
    near = jnp.array([0.1, np.pi / 2 - 1e-3, 0.2])  # close but regular: answered
    assert np.all(np.isfinite(mbjax.forward_dynamics(GIMBAL, near, qd, tau)))


def test_forward_dynamics_refuses_massless_coordinate():
    with pytest.raises(RuntimeError, match="singular"):
        mbjax.forward_dynamics(_arm(mass2=0.0), _z(), _z())


# ------------------------------------------------------------------------------------------------
# muscles: empty sets, inactive paths, coincident points
# ------------------------------------------------------------------------------------------------

DOUBLE_PENDULUM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="double_pendulum">
    <gravity>0 -9.80665 0</gravity>
    <BodySet name="bodyset"><objects>
      <Body name="rod1"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
      <Body name="rod2"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
    </objects></BodySet>
    <JointSet name="jointset"><objects>
      <PinJoint name="pin1">
        <socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/rod1</socket_child_frame>
        <coordinates><Coordinate name="q1"><range>-3.14 3.14</range></Coordinate></coordinates>
      </PinJoint>
      <PinJoint name="pin2">
        <socket_parent_frame>/bodyset/rod1</socket_parent_frame><socket_child_frame>/bodyset/rod2</socket_child_frame>
        <coordinates><Coordinate name="q2"><range>-3.14 3.14</range></Coordinate></coordinates>
      </PinJoint>
    </objects></JointSet>
  </Model>
</OpenSimDocument>
"""


def test_model_without_muscles_gives_empty_arrays(tmp_path):
    path = tmp_path / "double_pendulum.osim"
    path.write_text(DOUBLE_PENDULUM)
    for model in (mbjax.io.load_osim(str(path)), ARM):
        nq = model.n_coordinates
        q = jnp.zeros(nq)
        assert model.muscle_names == ()
        assert mbjax.muscle_lengths(model, q).shape == (0,)
        assert mbjax.moment_arms(model, q).shape == (nq, 0)
        assert mbjax.muscles.moment_arms_autodiff(model, q).shape == (nq, 0)
        world, active = mbjax.muscles.path_points(model, q)
        assert world.shape == (0, 0, 3) and active.shape == (0, 0)
        qs = jnp.zeros((3, nq))
        assert jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(model, qs).shape == (3, 0)
        assert jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))(model, qs).shape == (3, nq, 0)


def test_path_with_one_active_point_is_reported():
    model = with_muscles(ARM, {
        "ok": [PathPoint("ground", [0, 0.05, 0]), PathPoint("forearm", [0.0, -0.1, 0])],
        "c": [ConditionalPathPoint("ground", [0, 0.05, 0], coordinate="elbow", range=(0.0, 1.0)),
              PathPoint("forearm", [0.0, -0.1, 0])],
    })
    inside, outside = jnp.array([0.0, 0.5]), jnp.array([0.0, 2.0])
    assert np.all(np.isfinite(mbjax.muscle_lengths(model, inside)))
    for fn in (mbjax.muscle_lengths, mbjax.moment_arms):
        with pytest.raises(RuntimeError, match="fewer than 2 active points"):
            fn(model, outside)
    with mbjax.config.checks(False):  # never a plausible 0: NaN for that muscle, the other one intact
        lengths = mbjax.muscle_lengths(model, outside)
        r = mbjax.moment_arms(model, outside)
    assert np.isnan(lengths[1]) and np.isfinite(lengths[0])
    assert np.all(np.isnan(r[:, 1])) and np.all(np.isfinite(r[:, 0]))


def test_coincident_points_moment_arm_is_defined():
    """Consecutive points that coincide at q (a zero-length segment, a cone in q): the moment arm
    is the mean of the one-sided slopes, which a symmetric finite difference of L measures;
    fast path, autodiff and the central difference agree."""
    # upper_arm point at p + the elbow offset and forearm point p: coincident whenever elbow = 0
    p = np.array([0.03, 0.04, 0.0])
    model = with_muscles(ARM, {"m": [PathPoint("ground", [0, 0.05, 0]),
                                     PathPoint("upper_arm", p + [0.01, -0.3, 0.02]),
                                     PathPoint("forearm", p),
                                     PathPoint("forearm", [0.05, -0.2, 0.01])]})
    q = jnp.array([0.37, 0.0])
    world = mbjax.muscles.path_points(model, q)[0][0]
    assert np.linalg.norm(world[1] - world[2]) < 1e-15
    h = 1e-6
    fd = np.array([-(mbjax.muscle_lengths(model, q + h * e) - mbjax.muscle_lengths(model, q - h * e))[0] / (2 * h)
                   for e in np.eye(2)])
    fast = np.asarray(mbjax.moment_arms(model, q))[:, 0]
    auto = np.asarray(mbjax.muscles.moment_arms_autodiff(model, q))[:, 0]
    np.testing.assert_allclose(fast, fd, atol=1e-8)
    np.testing.assert_allclose(auto, fast, atol=1e-14)


# ------------------------------------------------------------------------------------------------
# simulate
# ------------------------------------------------------------------------------------------------


def test_simulate_refuses_bad_times_and_reports_singular_m():
    q0, qd0 = jnp.zeros(NQ), jnp.zeros(NQ)
    for ts, match in (([0.0, np.nan], "saveat"), ([0.0, 2.0], "within"), ([0.1, 0.05], "non-decreasing")):
        with pytest.raises(ValueError, match=match):
            mbjax.simulate(ARM, q0, qd0, 0.0, 1.0, saveat=ts)
    with pytest.raises(ValueError, match="t1 must not be before t0"):
        mbjax.simulate(ARM, q0, qd0, 1.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        mbjax.simulate(ARM, q0, qd0, 0.0, np.nan)
    with pytest.raises(ValueError, match="q0 and qd0 must have shape"):
        mbjax.simulate(ARM, jnp.zeros(1), qd0, 0.0, 1.0)
    traced = jax.jit(lambda ts: mbjax.simulate(ARM, q0, qd0, 0.0, 0.1, saveat=ts, max_steps=64).ys[0])
    with pytest.raises(JIT_ERROR, match="saveat times must be finite"):
        jax.block_until_ready(traced(jnp.array([0.0, jnp.nan])))
    with pytest.raises(JIT_ERROR, match="mass matrix M\\(q\\) is singular"):
        mbjax.simulate(GIMBAL, jnp.array([0.1, np.pi / 2, 0.2]), jnp.zeros(3), 0.0, 0.01, max_steps=64,
                       saveat=diffrax.SaveAt(t1=True))


# ------------------------------------------------------------------------------------------------
# float32 (JAX's default): loaders, kinematics, dynamics run and agree with float64
# ------------------------------------------------------------------------------------------------

_FLOAT32_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    assert not jax.config.jax_enable_x64
    import mbjax
    urdf, osim = sys.argv[1], sys.argv[2]
    out = {}
    for name, model in (("urdf", mbjax.io.load_urdf(urdf)), ("osim", mbjax.io.load_osim(osim))):
        nq = model.n_coordinates
        q = jnp.linspace(-0.4, 0.5, nq).astype(jnp.float32)
        qd = jnp.linspace(0.3, -0.2, nq).astype(jnp.float32)
        res = dict(
            poses=mbjax.body_poses(model, q), m=mbjax.mass_matrix(model, q),
            fd=mbjax.forward_dynamics(model, q, qd, jnp.ones(nq, jnp.float32)),
            ml=mbjax.muscle_lengths(model, q), r=mbjax.moment_arms(model, q),
        )
        assert all(v.dtype == jnp.float32 for v in res.values()), {k: v.dtype for k, v in res.items()}
        out[name] = {k: np.asarray(v, float).tolist() for k, v in res.items()}
    print(json.dumps(out))
    """
)

ROTATED_URDF = """<robot name="r">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0 0 0.1" rpy="0.1 0.2 0.3"/><mass value="1.5"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.025"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.05 0 0.1"/><mass value="0.7"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.008"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.2" rpy="0.3 -0.7 1.1"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.1 0.02 0.3" rpy="-1.2 0.4 2.0"/><axis xyz="0 1 0"/></joint>
</robot>
"""


@pytest.mark.extended
def test_float32_loaders_kinematics_dynamics(tmp_path):
    import json

    from _osim_models import write_coupled_model

    urdf = tmp_path / "rotated.urdf"
    urdf.write_text(ROTATED_URDF)
    osim = write_coupled_model(tmp_path)
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _FLOAT32_SCRIPT, str(urdf), osim], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # float64 reference in this process (conftest enables x64)
    for name, model in (("urdf", mbjax.io.load_urdf(str(urdf))), ("osim", mbjax.io.load_osim(osim))):
        nq = model.n_coordinates
        q = jnp.asarray(np.linspace(-0.4, 0.5, nq).astype(np.float32), jnp.float64)
        qd = jnp.asarray(np.linspace(0.3, -0.2, nq).astype(np.float32), jnp.float64)
        ref = dict(
            poses=mbjax.body_poses(model, q), m=mbjax.mass_matrix(model, q),
            fd=mbjax.forward_dynamics(model, q, qd, jnp.ones(nq)),
            ml=mbjax.muscle_lengths(model, q), r=mbjax.moment_arms(model, q),
        )
        for k, v in ref.items():
            v = np.asarray(v)
            scale = max(np.max(np.abs(v)), 1e-3) if v.size else 1.0
            np.testing.assert_allclose(np.asarray(got[name][k]).reshape(v.shape), v, atol=2e-4 * scale,
                                       err_msg=f"{name} {k}")


def test_static_optimization_setup_and_data_refused_by_name(tmp_path):
    """``mbjax.opensim.tools.so``: a missing file, the wrong tool, a bad number, reserves on unknown or doubled
    coordinates and NaN coordinates each raise, naming the file, element or coordinate."""
    from mbjax.io import Table
    from mbjax.opensim.tools.so import Reserve, read_so_setup, static_optimization_motion

    with pytest.raises(FileNotFoundError, match="nope.xml"):
        read_so_setup(tmp_path / "nope.xml")
    wrong = tmp_path / "id.xml"
    wrong.write_text('<?xml version="1.0"?><OpenSimDocument><InverseDynamicsTool name="x"/></OpenSimDocument>')
    with pytest.raises(ValueError, match=r"id.xml.*AnalyzeTool"):
        read_so_setup(wrong)
    bad = tmp_path / "so.xml"
    bad.write_text('<?xml version="1.0"?>\n<OpenSimDocument><AnalyzeTool name="a"><AnalysisSet><objects>\n'
                   '<StaticOptimization name="so"><activation_exponent>two</activation_exponent>\n'
                   '</StaticOptimization></objects></AnalysisSet></AnalyzeTool></OpenSimDocument>')
    with pytest.raises(ValueError, match=r"so.xml:3.*activation_exponent.*'two'"):
        read_so_setup(bad)
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 11)
    q = np.stack([0.1 + 0 * t, 0.5 + t], 1)
    table = Table(t, tuple(model.coordinate_names), q, False, {})
    with pytest.raises(ValueError, match=r"'wrist'.*'r_wrist'"):
        static_optimization_motion(model, table, reserves=(Reserve("wrist", "r_wrist", 1.0),), progress=False)
    with pytest.raises(ValueError, match=r"two actuators are named 'a'"):
        static_optimization_motion(model, table, reserves=(Reserve("a", "r_elbow_flex", 1.0),
                                                           Reserve("a", "r_shoulder_elev", 2.0)), progress=False)
    with pytest.raises(ValueError, match=r"'a'.*min_control 2.0 > max_control 1.0"):
        static_optimization_motion(model, table, reserves=(Reserve("a", "r_elbow_flex", 1.0, 2.0, 1.0),),
                                   progress=False)
    q[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        static_optimization_motion(model, Table(t, tuple(model.coordinate_names), q, False, {}), progress=False)


def test_muscle_pose_checks_are_one_fused_check():
    """muscle_lengths / moment_arms check the pose and the path in one host callback (a batched call
    pays one check per pose, not two); both rules still fire with their own message."""
    one = str(jax.make_jaxpr(lambda x: eqx.error_if(x, x > 1, "m"))(1.0)).count("callback")
    for fn in (mbjax.muscle_lengths, mbjax.moment_arms):
        with mbjax.config.checks(False):
            off = str(jax.make_jaxpr(lambda q: fn(MUSCLED, q))(_z())).count("callback")
        on = str(jax.make_jaxpr(lambda q: fn(MUSCLED, q))(_z())).count("callback")
        assert on - off == one, (fn.__name__, on, off)
        with pytest.raises(RuntimeError, match="q contains NaN or inf for coordinates"):
            fn(MUSCLED, _z().at[1].set(jnp.nan))
