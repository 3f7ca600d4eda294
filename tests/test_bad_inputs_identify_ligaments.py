"""Bad inputs to the identification helpers (``mbjax.analysis.identify``: Selection, StandardInertial,
ViscousDamping, huber_residual, pseudo_inertia, isometric_torques, the scaling functions and
fit_static_scale), the ligament functions (``mbjax.ligaments``), the reference twins
(``mbjax.reference``) and the process settings (``mbjax.config``): clear errors naming the function
and argument, never a silent wrong answer; valid twins checked against closed forms or a second route."""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf
import mbjax.io
import mbjax.ligaments as L
import mbjax.reference as ref
from mbjax.io.trc import MarkerData
from mbjax.markers import Markers
from mbjax.models import model_path

jax.config.update("jax_enable_x64", True)
RUNTIME = (RuntimeError, jax.errors.JaxRuntimeError)
I4 = jnp.eye(4)


def _two_links(gravity=(0.0, -9.81, 0.0)):
    b = mbjax.ModelBuilder(["q1", "q2"], gravity=list(gravity))
    b.add_body("upper", parent="ground", joint="revolute", axis=[0, 0, 1], map="q1", mass=1.0,
               inertia=[0.1, 0.2, 0.3], com=[0.5, 0.0, 0.0])
    b.add_body("lower", parent="upper", joint="revolute", axis=[0, 0, 1], map="q2", mass=2.0,
               inertia=[0.1, 0.2, 0.3], com=[0.4, 0.1, 0.0],
               offset=mbjax._spatial.transform(jnp.eye(3), jnp.array([1.0, 0.0, 0.0])))
    return b.build()


@pytest.fixture(scope="module")
def model():
    return _two_links()


@pytest.fixture(scope="module")
def arm_osim():
    return mbjax.io.load_osim(model_path("arm26"))


# ------------------------------------------------------------------------------------------ Selection


def test_selection_theta_of_wrong_size_refused_not_broadcast(model):
    sel = idf.Selection(model, lambda m: m.mass)
    assert sel.names == ("mass[upper]", "mass[lower]")
    np.testing.assert_array_equal(sel.apply(jnp.array([3.0, 4.0]), model).mass, [3.0, 4.0])
    np.testing.assert_array_equal(sel.theta(model), model.mass)
    with pytest.raises(ValueError, match=r"Selection.apply: theta must have shape \(n,\) = \(2,\).*got \(1,\)"):
        sel.apply(jnp.array([3.0]), model)  # was broadcast to both masses
    with pytest.raises(ValueError, match=r"theta must have shape \(n,\) = \(2,\).*got \(\)"):
        sel.apply(3.0, model)
    with pytest.raises(TypeError, match="Selection.apply: theta must be a real vector"):
        sel.apply("ab", model)
    with pytest.raises(TypeError, match="Selection.apply: theta must be real, got dtype complex"):
        sel.apply(jnp.array([1.0, 2.0]) * 1j, model)


def test_selection_on_another_tree_or_a_failing_where_is_named(model):
    sel = idf.Selection(model, lambda m: m.mass)
    other = mbjax.models.load("arm26", ignore_wrapping=True)
    with pytest.raises(ValueError, match=r"picks leaves of shapes \(\(3,\),\) .* built on a tree with \(\(2,\),\)"):
        sel.theta(other)  # was a theta of the wrong size, silently
    with pytest.raises(ValueError, match=r"`where` failed on the tree \(tuple\): AttributeError"):
        sel.apply(jnp.ones(2), (model, 1))
    with pytest.raises(ValueError, match=r"`where` failed on the tree \(NoneType\)"):
        idf.Selection(None, lambda m: m.mass)
    with pytest.raises(ValueError, match="selects the leaf 'mass' twice"):
        idf.Selection(model, lambda m: (m.mass, m.mass))
    with pytest.raises(TypeError, match="`where` must be a function"):
        idf.Selection(model, "mass")


# ----------------------------------------------------------------------------------- StandardInertial


def _where(m):
    return (m.mass, m.com, m.inertia)


def test_standard_inertial_is_the_barycentric_vector(model):
    sel = idf.Selection(model, _where, idf.StandardInertial(bodies=("lower",)))
    theta = np.asarray(sel.theta(model))
    m, c, ic = 2.0, np.array([0.4, 0.1, 0.0]), np.diag([0.1, 0.2, 0.3])
    io = ic + m * (c @ c * np.eye(3) - np.outer(c, c))  # parallel axis theorem by hand
    np.testing.assert_allclose(theta, [m, *(m * c), io[0, 0], io[0, 1], io[0, 2], io[1, 1], io[1, 2], io[2, 2]],
                               rtol=1e-14)
    back = sel.apply(jnp.asarray(theta), model)
    np.testing.assert_allclose(back.inertia, model.inertia, atol=1e-14)
    # a negative index names the same body (same numbers)
    np.testing.assert_array_equal(idf.Selection(model, _where, idf.StandardInertial(bodies=(-1,))).theta(model), theta)


@pytest.mark.parametrize("bodies, error, message", [
    ("lower", TypeError, r"bodies must be None .* got 'lower'; for one body write bodies=\('lower',\)"),
    (1, TypeError, r"bodies must be None .* got 1; for one body write bodies=\(1,\)"),
    ((1, 1), ValueError, r"bodies \['lower'\] given more than once"),
    ((-1, "lower"), ValueError, r"bodies \['lower'\] given more than once"),
    ((), ValueError, r"no body to parametrize \(bodies=\(\)\)"),
    ((5,), ValueError, r"bodies \[5\] are not body names or indices in \[0, 2\)"),
])
def test_standard_inertial_bad_bodies(model, bodies, error, message):
    with pytest.raises(error, match="StandardInertial: " + message):
        idf.Selection(model, _where, idf.StandardInertial(bodies=bodies))


def test_standard_inertial_theta_of_wrong_size(model):
    sel = idf.Selection(model, _where, idf.StandardInertial())
    with pytest.raises(ValueError, match=r"theta must have shape \(n,\) = \(20,\).*got \(2, 10\)"):
        sel.apply(jnp.zeros((2, 10)), model)  # was reshaped silently
    with pytest.raises(ValueError, match=r"theta must have shape \(n,\) = \(20,\).*got \(5,\)"):
        sel.apply(jnp.zeros(5), model)


# ------------------------------------------------------------------------------------- pseudo_inertia


def test_pseudo_inertia_point_mass_closed_form():
    m, c = 2.0, np.array([1.0, 2.0, 3.0])
    j = idf.pseudo_inertia(jnp.array([m]), jnp.array([c]), jnp.zeros((1, 3, 3)))
    h = np.append(c, 1.0)
    np.testing.assert_allclose(j[0], m * np.outer(h, h), rtol=1e-14)  # J = ∫ [r; 1][r; 1]ᵀ dm


@pytest.mark.parametrize("args, message", [
    ((1.0, np.zeros(3), np.eye(3)), r"m must have shape \(n,\) .* got \(\)"),
    ((np.ones(2), np.zeros((2, 2)), np.zeros((2, 3, 3))), r"c must have shape \(n, 3\) .* got \(2, 2\)"),
    ((np.ones(2), np.zeros((2, 3)), np.zeros((2, 2, 3))), r"ic must have shape \(n, 3, 3\) .* got \(2, 2, 3\)"),
    ((np.ones(1), np.zeros((2, 3)), np.zeros((2, 3, 3))), "m, c and ic must hold the same number of bodies, got 1, 2, 2"),
])
def test_pseudo_inertia_bad_shapes(args, message):
    with pytest.raises(ValueError, match="pseudo_inertia: " + message):
        idf.pseudo_inertia(*args)


def test_pseudo_inertia_bad_values():
    with pytest.raises(TypeError, match="pseudo_inertia: m must be an array"):
        idf.pseudo_inertia("a", np.zeros((1, 3)), np.zeros((1, 3, 3)))
    with pytest.raises(RUNTIME, match="pseudo_inertia: c contains NaN or inf"):
        idf.pseudo_inertia(np.ones(1), np.full((1, 3), np.nan), np.zeros((1, 3, 3)))


# ------------------------------------------------------------------------------------- huber_residual


def test_huber_residual_closed_form_and_bad_thresholds():
    r = jnp.array([-3.0, -0.5, 0.2, 2.0])
    rt = np.asarray(idf.huber_residual(r, 1.0))
    a = np.abs(np.asarray(r))
    rho = np.where(a <= 1.0, 0.5 * a**2, 1.0 * (a - 0.5))  # Huber's loss by hand
    np.testing.assert_allclose(0.5 * rt**2, rho, rtol=1e-14)
    for delta in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match=r"huber_residual: delta must be a finite number > 0"):
            idf.huber_residual(r, delta)  # 0 gave zeros, -1 gave ones, NaN NaNs
    with pytest.raises(ValueError, match=r"delta must be one number .* got shape \(3,\)"):
        idf.huber_residual(r, jnp.ones(3))
    with pytest.raises(TypeError, match="huber_residual: delta must be a number"):
        idf.huber_residual(r, "1")
    with pytest.raises(TypeError, match="huber_residual: r must hold real residuals, got dtype complex"):
        idf.huber_residual(r * 1j, 1.0)
    with pytest.raises(RUNTIME, match="huber_residual: r contains NaN or inf"):
        idf.huber_residual(r.at[0].set(jnp.nan), 1.0)
    with pytest.raises(RUNTIME, match="huber_residual: delta must be a finite number > 0"):
        jax.jit(idf.huber_residual)(r, -1.0)


# ------------------------------------------------------------------------------------- ViscousDamping


def test_viscous_damping_coefficients_checked(model):
    qd = jnp.array([1.0, -2.0])
    np.testing.assert_array_equal(idf.ViscousDamping(jnp.array([0.1, 0.3]))(0.0, jnp.zeros(2), qd), [-0.1, 0.6])
    np.testing.assert_array_equal(idf.ViscousDamping(0.5)(0.0, jnp.zeros(2), qd), [-0.5, 1.0])
    with pytest.raises(ValueError, match=r"ViscousDamping: c has shape \(1,\) but the model has 2 coordinates"):
        idf.ViscousDamping(jnp.array([0.1]))(0.0, jnp.zeros(2), qd)  # was broadcast silently
    with pytest.raises(ValueError, match=r"c has shape \(3,\) but the model has 2 coordinates"):
        mbjax.simulate(model, jnp.zeros(2), qd, 0.0, 0.01, forces=idf.ViscousDamping(jnp.ones(3)))
    with pytest.raises(ValueError, match=r"c must be finite and >= 0 .* got -0.1 \(a negative coefficient feeds"):
        idf.ViscousDamping(-0.1)
    with pytest.raises(ValueError, match=r"c must be finite and >= 0 .* got nan at index 1"):
        idf.ViscousDamping(jnp.array([0.1, jnp.nan]))
    with pytest.raises(TypeError, match="ViscousDamping: c must be damping coefficients"):
        idf.ViscousDamping("0.1")
    with pytest.raises(ValueError, match=r"c must be a number or a vector \(nq,\).*got shape \(2, 2\)"):
        idf.ViscousDamping(jnp.ones((2, 2)))


# ---------------------------------------------------------------------------------- isometric_torques


def test_isometric_torques_bad_inputs_and_the_moment_arm_route():
    arm = mbjax.models.load("arm26", ignore_wrapping=True)
    q, a = jnp.array([0.3, 0.6]), jnp.full(6, 0.5)
    tau = idf.isometric_torques(arm, q, a)
    # second route: R = -∂L/∂q (virtual work), F from muscle_forces
    force = mbjax.muscle_forces(arm, q, jnp.zeros(2), a)
    dl = jax.jacfwd(lambda x: mbjax.muscle_lengths(arm, x))(q)
    np.testing.assert_allclose(tau, -dl.T @ force, rtol=1e-8, atol=1e-9)
    with pytest.raises(TypeError, match=r"isometric_torques.*model must be an mbjax Model \(the first argument; .*\), got ArrayImpl"):
        idf.isometric_torques(q, arm, a)
    with pytest.raises(TypeError, match="isometric_torques: q must be a real array"):
        idf.isometric_torques(arm, "q", a)
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        idf.isometric_torques(arm, q[:1], a)
    with pytest.raises(ValueError, match=r"activation must have shape \(nm,\) = \(6,\)"):
        idf.isometric_torques(arm, q, a[:2])
    with pytest.raises(RUNTIME, match=r"activation must be in \[0, 1\]"):
        idf.isometric_torques(arm, q, a.at[0].set(2.0))


# --------------------------------------------------------------- segment_factors, scale_markers, ...


def test_segment_factors_bad_values_named(arm_osim):
    f = idf.segment_factors(arm_osim, {"r_humerus": 1.1})
    np.testing.assert_array_equal(f, [1.0, 1.1, 1.0])
    np.testing.assert_array_equal(idf.segment_factors(arm_osim, [1, 2, 3]), [1.0, 2.0, 3.0])
    bad = [
        ({"r_humerus": "big"}, TypeError, r"segment_factors: the scale factor of body 'r_humerus' must be a number"),
        ({"r_humerus": [1.0, 2.0]}, ValueError, r"scale factor of body 'r_humerus' must have shape \(\), got \(2,\)"),
        (np.ones(3, bool), TypeError, r"segment_factors: scale factors .* must be real numbers .* got dtype bool"),
        (np.ones(3) * (1 + 1j), TypeError, r"must be real numbers .* got dtype complex128"),
        (None, TypeError, r"segment_factors: factors must be a dict body name -> factor .* got None"),
        ("1.1", TypeError, r"segment_factors: factors must be a dict .* got '1.1'"),
        ([1.1], ValueError, r"segment_factors: scale factors .* must have shape \(3,\), got \(1,\)"),
        ({"r_humerus": -1.0}, ValueError, r"segment_factors: scale factors must be positive and finite: r_humerus=-1.0"),
        ({"humerus": 1.1}, ValueError, r"segment_factors: scale factors for unknown body\(ies\) \['humerus'\]"),
    ]
    for factors, error, message in bad:
        with pytest.raises(error, match=message):
            idf.segment_factors(arm_osim, factors)
    with pytest.raises(TypeError, match="segment_factors: model must be an mbjax Model"):
        idf.segment_factors("arm26", {"r_humerus": 1.1})
    with pytest.raises(RUNTIME, match="segment_factors: scale factor of body 'r_humerus' must be positive"):
        jax.jit(lambda x: idf.segment_factors(arm_osim, x))(jnp.array([1.0, jnp.nan, 1.0]))


def test_scale_markers_and_kinematics(arm_osim):
    mk = Markers(["h", "f", "g"], [1, 2, -1], [[0.1, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.3]])
    out = idf.scale_markers(arm_osim, mk, {"r_humerus": 2.0, "r_ulna_radius_hand": 0.5})
    np.testing.assert_allclose(out.offset, [[0.2, 0, 0], [0, 0.1, 0], [0, 0, 0.3]], rtol=1e-15)  # by hand
    with pytest.raises(TypeError, match=r"scale_markers\(model, markers, factors\): markers must be mbjax.Markers"):
        idf.scale_markers(arm_osim, {"r_humerus": 2.0}, mk)  # arguments swapped
    far = Markers(["a", "far"], [0, 9], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="scale_markers: marker 'far' is on body index 9, but the model has 3 bodies"):
        idf.scale_markers(arm_osim, far, {"r_humerus": 2.0})  # was an IndexError
    with pytest.raises(ValueError, match=r"scale_markers: scale factors .* must have shape \(3,\)"):
        idf.scale_markers(arm_osim, mk, [2.0])
    # scale_kinematics: one factor k for every body scales the body origins about the base's by k,
    # rotations unchanged (the base's joint to ground is scaled by ground's factor 1)
    q = jnp.array([0.3, 0.8])
    p0 = np.asarray(mbjax.body_poses(arm_osim, q))
    p1 = np.asarray(mbjax.body_poses(idf.scale_kinematics(arm_osim, [1.2, 1.2, 1.2]), q))
    np.testing.assert_allclose(p1[:, :3, :3], p0[:, :3, :3], atol=1e-15)
    np.testing.assert_allclose(p1[:, :3, 3] - p1[0, :3, 3], 1.2 * (p0[:, :3, 3] - p0[0, :3, 3]), atol=1e-14)
    with pytest.raises(ValueError, match="scale_kinematics: scale factors must be positive and finite: r_humerus=inf"):
        idf.scale_kinematics(arm_osim, {"r_humerus": np.inf})
    with pytest.raises(TypeError, match="scale_kinematics: the scale factor of body 'base' must be a number"):
        idf.scale_kinematics(arm_osim, {"base": "x"})


# ------------------------------------------------------------------------------------ fit_static_scale


@pytest.fixture(scope="module")
def static_trial(arm_osim):
    mk = Markers(["h1", "h2", "f1", "b1"], [1, 1, 2, 0],
                 [[0.02, -0.1, 0.0], [0.0, -0.25, 0.02], [0.03, -0.05, 0.0], [0.05, 0.0, 0.0]])
    truth = {"r_humerus": 1.1, "r_ulna_radius_hand": 0.9}
    x = np.asarray(mbjax.marker_positions(idf.scale_kinematics(arm_osim, truth),
                                          idf.scale_markers(arm_osim, mk, truth), jnp.array([0.4, 0.7])))
    data = MarkerData(np.array([0.0, 0.01]), mk.names, np.stack([x, x]))
    groups = {"base": ("base",), "hum": ("r_humerus",), "fore": ("r_ulna_radius_hand",)}
    return mk, data, groups


@pytest.mark.parametrize("change, error, message", [
    (dict(groups=[("base",)]), TypeError, "groups must be a dict group name -> tuple of body names, got list"),
    (dict(groups={"base": "base", "hum": ("r_humerus",), "fore": ("r_ulna_radius_hand",)}), TypeError,
     r"group 'base' must be a tuple of body names, got 'base'; for one body write \('base',\)"),
    (dict(groups={"base": ("base",), "hum": ("r_humerus",), "fore": ("r_ulna_radius_hand",), "none": ()}),
     ValueError, "group 'none' holds no body"),
    (dict(weights={"h1": -1.0}), ValueError, r"weights\['h1'\] must be a finite number >= 0, got -1.0"),
    (dict(weights={"h1": "a"}), TypeError, r"weights\['h1'\] must be a number, got 'a'"),
    (dict(weights=[1.0] * 4), TypeError, "weights must be a dict marker name -> weight, got list"),
    (dict(weights={"zz": 1.0}), ValueError, "weights names marker 'zz', which is not in the model"),
    (dict(factors0={"hum": "big"}), TypeError, r"factors0\['hum'\] must be a number, got 'big'"),
    (dict(factors0=[1.0, 1.0, 1.0]), TypeError, "factors0 must be a dict group name -> factor, got list"),
    (dict(time_range=(1.0, 0.0)), ValueError, "time_range start 1.0 is past its end 0.0"),
    (dict(time_range=(5.0, 6.0)), ValueError, r"time_range \(5, 6\) lies outside the data's times 0 to 0.01"),
    (dict(time_range=0.0), TypeError, r"time_range must be \(start, end\) in seconds, got 0.0"),
    (dict(coordinate_tasks={"elbow": 1.0}), ValueError, "coordinate_tasks names an unknown coordinate 'elbow'"),
    (dict(coordinate_tasks={"r_elbow_flex": -1.0}), ValueError,
     "coordinate task 'r_elbow_flex' has weight -1.0; give a finite weight >= 0"),
    (dict(markers=np.zeros((4, 3))), TypeError, "markers must be mbjax.Markers"),
    (dict(data=np.zeros((2, 4, 3))), TypeError, "data must be mbjax.io.MarkerData"),
    (dict(model=None), TypeError, "model must be an mbjax Model"),
])
def test_fit_static_scale_bad_arguments_refused_before_fitting(arm_osim, static_trial, change, error, message):
    """Refused up front (the valid fit recovering known factors: tests/test_static_scaling.py)."""
    mk, data, groups = static_trial
    args = dict(model=arm_osim, markers=mk, data=data, groups=groups)
    args.update(change)
    kwargs = {k: v for k, v in args.items() if k not in ("model", "markers", "data", "groups")}
    with pytest.raises(error, match="fit_static_scale: " + message):
        idf.fit_static_scale(args["model"], args["markers"], args["data"], args["groups"], **kwargs)


def test_fit_static_scale_bad_data_named(arm_osim, static_trial):
    mk, data, groups = static_trial
    gone = data._replace(positions=np.full_like(data.positions, np.nan))
    with pytest.raises(ValueError, match=r"every tracked marker \('h1', 'h2', 'f1', 'b1'\) is missing \(NaN\)"):
        idf.fit_static_scale(arm_osim, mk, gone, groups)  # was "marker weights must be ... not all 0"
    other = MarkerData(np.array([0.0]), ("zz",), np.zeros((1, 1, 3)))
    with pytest.raises(ValueError, match="no marker of the model is in the data"):
        idf.fit_static_scale(arm_osim, mk, other, groups)
    short = data._replace(positions=data.positions[:, :3])
    with pytest.raises(ValueError, match=r"positions \(T, n_markers, 3\) = \(2, 4, 3\) .* got time \(2,\), "
                                         r"positions \(2, 3, 3\)"):
        idf.fit_static_scale(arm_osim, mk, short, groups)  # was an IndexError


# ------------------------------------------------------------------------------------------- ligaments


def _ligament():
    lm = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0], [0.3, 0.6]]) * 0.01
    phi = L.fit_tps(lm, lm, 0.0, scale=1e-3)
    flat = L.fit_tps(lm, np.zeros(5), 0.0, scale=1e-3)
    dom = np.array([[0, 0], [1, 0], [1.2, 0.7], [0.4, 1.1], [-0.2, 0.5]]) * 0.01
    frame_b = mbjax._spatial.transform(jnp.eye(3), jnp.asarray([0.0, 0.0, 0.03]))
    lig = L.TPSMLigament(phi, flat, flat, I4, frame_b, jnp.asarray(dom), jnp.asarray(1e6), jnp.asarray(0.02))
    return lig, L.triangulate(dom, 8), lm


@pytest.fixture(scope="module")
def ligament():
    return _ligament()


def test_fibre_law_closed_forms_and_bad_inputs():
    e = jnp.array([-0.1, 0.02, 0.05])
    np.testing.assert_allclose(L.fibre_law(e, 1e6), [0.0, 1e6 * 0.02**2, 1e6 * 0.05**2], rtol=1e-14)
    # Blankevoort: toe c ε²/(4 ε_l) below 2 ε_l = 0.06, linear c (ε - ε_l) above
    eb = jnp.array([0.03, 0.1])
    np.testing.assert_allclose(L.fibre_law(eb, 2.0, "blankevoort"), [2 * 0.03**2 / 0.12, 2 * (0.1 - 0.03)], rtol=1e-14)
    for ts in (0.0, -0.06, np.nan):
        with pytest.raises(ValueError, match="fibre_law: transition_strain must be a finite number > 0"):
            L.fibre_law(e, 1e6, "blankevoort", ts)  # 0 gave NaN, negative a plausible stress
    with pytest.raises(ValueError, match=r"fibre_law: law 'linear' is not one of"):
        L.fibre_law(e, 1e6, "linear")
    with pytest.raises(ValueError, match=r"fibre_law: stiffness has shape \(2,\), strain \(3,\)"):
        L.fibre_law(e, jnp.ones(2))
    with pytest.raises(ValueError, match=r"fibre_law: stiffness has shape \(3,\), strain \(3, 1\)"):
        L.fibre_law(e[:, None], jnp.ones(3))  # was broadcast to (3, 3)
    with pytest.raises(TypeError, match="fibre_law: stiffness must be a real array or number, got str"):
        L.fibre_law(e, "1e6")
    with pytest.raises(TypeError, match="fibre_law: strain must be real, got dtype complex128"):
        L.fibre_law(e + 0j, 1e6)
    with pytest.raises(RUNTIME, match=r"fibre_law: stiffness must be finite and >= 0 \(Pa\)"):
        L.fibre_law(e, -1e6)  # was a negative stress
    with pytest.raises(RUNTIME, match="fibre_law: strain contains NaN or inf"):
        L.fibre_law(e.at[0].set(jnp.nan), 1e6)


@pytest.mark.parametrize("law", ["quadratic", "blankevoort"])
def test_fibre_energy_density_derivative_is_the_law(law):
    e = jnp.array([-0.01, 0.02, 0.05, 0.1])
    l0 = 0.02
    de = jax.vmap(jax.grad(lambda x: L.fibre_energy_density(x, 3.0, l0, law)))(e)
    np.testing.assert_allclose(de, l0 * L.fibre_law(e, 3.0, law), rtol=1e-12, atol=1e-15)  # dU/dε = l0 f


def test_fibre_energy_density_bad_inputs():
    e = jnp.array([0.02, 0.05])
    for l0 in (0.0, -0.02):
        with pytest.raises(RUNTIME, match=r"fibre_energy_density: free_length must be finite and > 0 \(m\)"):
            L.fibre_energy_density(e, 1e6, l0)  # 0 gave zero energy, negative a negative one
    with pytest.raises(ValueError, match=r"fibre_energy_density: free_length has shape \(3,\), strain \(2,\)"):
        L.fibre_energy_density(e, 1e6, jnp.ones(3))
    with pytest.raises(ValueError, match="fibre_energy_density: transition_strain must be a finite number > 0"):
        L.fibre_energy_density(e, 1e6, 0.02, "blankevoort", -1)
    with pytest.raises(ValueError, match="fibre_energy_density: law 'lin' is not one of"):
        L.fibre_energy_density(e, 1e6, 0.02, "lin")


def test_twist_perturbation_closed_form_and_bad_inputs():
    th = 0.3
    t = L.twist_perturbation(jnp.array([0.0, 0.0, th, 0.1, 0.2, 0.3]))
    rz = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
    np.testing.assert_allclose(t[:3, :3], rz, atol=1e-14)
    np.testing.assert_allclose(t[:3, 3], [0.1, 0.2, 0.3], atol=1e-15)
    for bad in (jnp.zeros(3), jnp.zeros(7), jnp.zeros((2, 6))):
        with pytest.raises(ValueError, match=r"twist_perturbation: xi must have shape \(6,\)"):
            L.twist_perturbation(bad)  # was a broadcasting error from inside
    with pytest.raises(ValueError, match=r"twist_perturbation: xi must be a real array of shape \(6,\), got str"):
        L.twist_perturbation("abcdef")
    with pytest.raises(RUNTIME, match="twist_perturbation: xi contains NaN or inf"):
        L.twist_perturbation(jnp.full(6, jnp.nan))


def test_quadrature_points_checks_a_mesh_it_is_given(ligament):
    _, mesh, _ = ligament
    xy, w = L.quadrature_points(mesh, L.gauss_rule(3))
    area = 0.5 * np.abs(np.cross(mesh.corners[:, 1] - mesh.corners[:, 0], mesh.corners[:, 2] - mesh.corners[:, 0]))
    np.testing.assert_allclose(w.sum(), area.sum(), rtol=1e-13)
    assert xy.shape == (3 * mesh.n_triangles, 2)
    with pytest.raises(ValueError, match=r"mesh: triangle indices out of range \[0, 9\)"):
        L.quadrature_points(L.Mesh(mesh.vertices, mesh.triangles + 100), L.gauss_rule(3))  # was an IndexError
    with pytest.raises(ValueError, match="mesh: vertices must be finite"):
        L.quadrature_points(L.Mesh(mesh.vertices * np.nan, mesh.triangles), L.gauss_rule(3))  # was NaN weights
    with pytest.raises(ValueError, match="mesh: no triangles"):
        L.quadrature_points(L.Mesh(mesh.vertices, np.zeros((0, 3), int)), L.gauss_rule(3))
    with pytest.raises(TypeError, match="quadrature_points: rule must be a TriangleRule"):
        L.quadrature_points(L.gauss_rule(3), mesh)


def test_spatial_area_and_multibundle_fibres(ligament):
    lig, mesh, _ = ligament
    area = 0.5 * np.abs(np.cross(mesh.corners[:, 1] - mesh.corners[:, 0], mesh.corners[:, 2] - mesh.corners[:, 0]))
    np.testing.assert_allclose(L.spatial_area(lig, mesh), area.sum(), rtol=1e-12)  # a flat insertion
    fib = L.multibundle_fibres(lig, mesh)
    assert fib.n_fibres == mesh.vertices.shape[0]
    np.testing.assert_allclose(fib.weight.sum(), area.sum(), rtol=1e-12)
    for fn in (L.spatial_area, L.multibundle_fibres):
        with pytest.raises(TypeError, match=fn.__name__ + r"\(lig, mesh\): lig must be a TPSMLigament .* got Mesh"):
            fn(mesh, lig)  # was an AttributeError
        with pytest.raises(TypeError, match="got ThinPlateSpline"):
            fn(lig.phi, mesh)
        with pytest.raises(ValueError, match="mesh: triangle indices out of range"):
            fn(lig, L.Mesh(mesh.vertices, mesh.triangles + 100))
    with pytest.raises(ValueError, match="multibundle_fibres: placement must be 'vertices' or 'centroids'"):
        L.multibundle_fibres(lig, mesh, "edges")


def test_fibre_length_range(ligament):
    lig, mesh, _ = ligament
    np.testing.assert_allclose(L.fibre_length_range(lig, 200), (0.03, 0.03, 0.03), rtol=1e-12)  # frames 3 cm apart
    for n in (0, -5, 10.5, True):
        with pytest.raises(ValueError, match="fibre_length_range: n must be an integer >= 1"):
            L.fibre_length_range(lig, n)  # 0 was a numpy reduction error
    with pytest.raises(ValueError, match="fibre_length_range: seed must be an integer >= 0, got 'a'"):
        L.fibre_length_range(lig, 100, "a")
    with pytest.raises(TypeError, match="fibre_length_range: lig must be a TPSMLigament"):
        L.fibre_length_range(mesh)


def test_register_interpolates_and_refuses_non_planar_landmarks(ligament):
    _, _, lm = ligament
    subject = lm * 1.1 + np.array([0.001, -0.002])
    tps = L.register(lm, subject)
    np.testing.assert_allclose(jax.vmap(tps)(jnp.asarray(lm)), subject, atol=1e-14)  # exact at λ = 0
    with pytest.raises(ValueError, match=r"register: subject_landmarks must have shape \(n, 2\) .* got \(5, 3\)"):
        L.register(lm, np.zeros((5, 3)))  # was a 2-D -> 3-D map
    with pytest.raises(ValueError, match=r"subject_landmarks must have shape \(n, 2\) .* got \(5,\)"):
        L.register(lm, np.zeros(5))
    with pytest.raises(ValueError, match=r"reference_landmarks \(5, 2\) and subject_landmarks \(4, 2\) must pair up"):
        L.register(lm, lm[:4])
    with pytest.raises(TypeError, match="register: reference_landmarks must be an array"):
        L.register("lm", lm)
    with pytest.raises(TypeError, match="register: reference_landmarks must be real, got dtype complex128"):
        L.register(lm + 0j, lm)
    with pytest.raises(TypeError, match="register: lam must be a number"):
        L.register(lm, lm, "0")
    with pytest.raises(ValueError, match="relaxation λ must be >= 0"):
        L.register(lm, lm, -1.0)


def test_tps_kernel_closed_form_and_bad_distances():
    r2 = jnp.array([0.0, 1.0, 4.0, 0.25])
    r = np.sqrt(np.asarray(r2))
    np.testing.assert_allclose(L.tps_kernel(r2), np.where(r > 0, r**2 * np.log(np.where(r > 0, r, 1)), 0.0),
                               atol=1e-15)
    for bad in (-1.0, jnp.nan, jnp.inf):
        with pytest.raises(RUNTIME, match=r"tps_kernel: r2 \(squared distances\) must be finite and >= 0"):
            L.tps_kernel(jnp.array([1.0, bad]))  # -1 and NaN gave 0
    with pytest.raises(TypeError, match="tps_kernel: r2 must be an array of squared distances, got str"):
        L.tps_kernel("a")
    with pytest.raises(TypeError, match="tps_kernel: r2 must be real squared distances, got dtype complex128"):
        L.tps_kernel(jnp.array([1j]))


def test_generalized_stiffness_finite_differences_and_bad_inputs(ligament):
    lig, mesh, _ = ligament
    b = mbjax.ModelBuilder(["q1", "q2"])
    b.add_body("tib", parent="ground", joint="revolute", axis=[0, 0, 1], map="q1", mass=1.0, inertia=[0.1] * 3)
    b.add_body("fem", parent="tib", joint="revolute", axis=[1, 0, 0], map="q2", mass=1.0, inertia=[0.1] * 3)
    m = b.build()
    el = L.LigamentForce.between(m, L.discretize(lig, mesh, L.gauss_rule(3)), "tib", "fem")
    q = jnp.array([0.1, 0.2])
    k = L.generalized_stiffness(m, q, el)
    h = 1e-6
    fd = np.stack([(L.ligament_generalized_forces(m, q.at[i].add(h), el)
                    - L.ligament_generalized_forces(m, q.at[i].add(-h), el)) / (2 * h) for i in range(2)], 1)
    np.testing.assert_allclose(k, -fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(L.generalized_stiffness(m, [0, 0], el), L.generalized_stiffness(m, jnp.zeros(2), el))
    with pytest.raises(TypeError, match=r"generalized_stiffness\(model, q, element\): model must be an mbjax Model"):
        L.generalized_stiffness(el, q, m)
    with pytest.raises(TypeError, match="generalized_stiffness: element must be a LigamentForce, got FibreSet"):
        L.generalized_stiffness(m, q, el.fibres)
    with pytest.raises(TypeError, match=r"generalized_stiffness: q must be a real array of shape \(nq,\), got str"):
        L.generalized_stiffness(m, "ab", el)
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        L.generalized_stiffness(m, q[:1], el)
    with pytest.raises(RUNTIME, match="q contains NaN or inf"):
        L.generalized_stiffness(m, q.at[0].set(jnp.nan), el)


# -------------------------------------------------------------------------------------- reference twins


def test_gravity_forces_kron_matches_the_core_and_refuses_bad_inputs(model):
    q = jnp.array([0.3, 0.5])
    np.testing.assert_allclose(ref.gravity_forces_kron(model, q), mbjax.gravity_forces(model, q), rtol=1e-12)
    derivs = ref.pose_derivatives_kron(model, q)
    np.testing.assert_allclose(ref.gravity_forces_kron(model, q, derivs), mbjax.gravity_forces(model, q), rtol=1e-12)
    with pytest.raises(TypeError, match=r"gravity_forces_kron\(model, q, ...\): model must be an mbjax.Model"):
        ref.gravity_forces_kron(q, model)  # was an AttributeError
    with pytest.raises(ValueError, match=r"gravity_forces_kron: derivs must be \(B, D, Dpp\) .* over the 2 bodies"):
        ref.gravity_forces_kron(model, q, derivs=derivs[:2])  # was "not enough values to unpack"
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        ref.gravity_forces_kron(model, q[:1])
    with pytest.raises(RUNTIME, match="q contains NaN"):
        ref.gravity_forces_kron(model, q.at[0].set(jnp.nan))


def test_pose_derivatives_kron_first_block_is_the_pose(model):
    q = jnp.array([0.3, 0.5])
    b, d, dd = ref.pose_derivatives_kron(model, q, "closed")
    poses = mbjax.body_poses(model, q)
    for i in range(2):
        np.testing.assert_allclose(b[i], poses[i].T, atol=1e-15)  # B_i = ⁰ᵢA₄ᵀ
        jac = jax.jacfwd(lambda x: mbjax.body_poses(model, x)[i].T)(q)  # ∂B_i/∂q, Definition-1 layout
        np.testing.assert_allclose(d[i], np.transpose(jac, (0, 2, 1)).reshape(8, 4), atol=1e-12)
    with pytest.raises(ValueError, match="pose_derivatives_kron: method must be 'recursive' or 'closed', got 'closd'"):
        ref.pose_derivatives_kron(model, q, "closd")
    with pytest.raises(TypeError, match=r"pose_derivatives_kron\(model, q, ...\): model must be an mbjax.Model"):
        ref.pose_derivatives_kron(q, model)
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        ref.pose_derivatives_kron(model, jnp.zeros(3))


def test_joint_reactions_classical_equals_the_resolved_route_and_refuses_bad_inputs(model):
    import mbjax.reactions as rx

    q, qd = jnp.array([0.3, 0.5]), jnp.array([0.1, -0.2])
    lam = ref.joint_reactions_classical(model, q, qd)
    qdd = mbjax.forward_dynamics(model, q, qd, jnp.zeros(2))  # Eq. 2.11 is forward dynamics: a second route
    np.testing.assert_allclose(lam, rx.resolved_multipliers(model, q, qd, qdd), rtol=1e-9, atol=1e-9)
    with pytest.raises(TypeError, match=r"joint_reactions_classical: q must be a real array of shape \(nq,\) = \(2,\)"):
        ref.joint_reactions_classical(model, "ab", qd)  # was a JAX error about '<U2'
    with pytest.raises(TypeError, match=r"joint_reactions_classical\(model, q, qd, ...\): model must be an mbjax.Model"):
        ref.joint_reactions_classical(q, model, qd)
    with pytest.raises(ValueError, match=r"qd must have shape \(nq,\) = \(2,\)"):
        ref.joint_reactions_classical(model, q, qd[:1])
    with pytest.raises(RUNTIME, match="NaN"):
        ref.joint_reactions_classical(model, q, qd.at[0].set(jnp.nan))


# ------------------------------------------------------------------------------------ process settings


def _cache_state():
    from mbjax import program_store

    keys = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
            "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size")
    return {k: getattr(jax.config, k) for k in keys}, program_store.program_store_dir()


def _restore(state):
    from jax.experimental.compilation_cache import compilation_cache as cc

    from mbjax import program_store

    settings, store = state
    for k, v in settings.items():
        jax.config.update(k, v)
    cc.reset_cache()
    if store is None:
        program_store.disable_program_store()
    else:
        program_store.enable_program_store(store)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(path=3), TypeError, "path must be a folder .* got int 3"),
    (dict(path=""), ValueError, "path is empty"),
    (dict(min_compile_time="1"), TypeError, "min_compile_time must be a number of seconds, got '1'"),
    (dict(min_compile_time=np.nan), ValueError, "min_compile_time must be a finite number >= 0 seconds, got nan"),
    (dict(min_compile_time=-1.0), ValueError, "min_compile_time must be a finite number >= 0"),
    (dict(max_bytes="2GB"), TypeError, "max_bytes must be an integer number of bytes"),
    (dict(max_bytes=1.5e9), TypeError, "max_bytes must be an integer number of bytes"),  # was truncated silently
    (dict(max_bytes=-5), ValueError, "max_bytes must be >= 0 bytes, or -1 for no cap, got -5"),
    (dict(programs="no"), TypeError, "programs must be True or False, got 'no'"),  # a string read as True
])
def test_enable_compilation_cache_refuses_bad_options_and_changes_nothing(tmp_path, kwargs, error, message):
    before = _cache_state()
    folder = tmp_path / "cache"
    args = dict(path=folder)
    args.update(kwargs)
    try:
        with pytest.raises(error, match="enable_compilation_cache: " + message):
            mbjax.config.enable_compilation_cache(args.pop("path"), **args)
        assert _cache_state() == before  # refused calls leave the process as it was
        assert not folder.exists()  # and create no folder
    finally:
        _restore(before)


def test_enable_compilation_cache_programs_folder_checked_first(tmp_path):
    before = _cache_state()
    (tmp_path / "cache-programs").write_text("x")  # the program store's folder is a file
    try:
        with pytest.raises(ValueError, match="program store .*cache-programs: exists and is not a folder"):
            mbjax.config.enable_compilation_cache(tmp_path / "cache")
        assert _cache_state() == before  # was: JAX's cache already switched to the new folder
        out = mbjax.config.enable_compilation_cache(tmp_path / "ok", min_compile_time=1, max_bytes=-1, programs=False)
        assert out == str(tmp_path / "ok") and jax.config.jax_compilation_cache_dir == out
        assert jax.config.jax_compilation_cache_max_size == -1
    finally:
        _restore(before)
    assert _cache_state() == before


def test_single_threaded_matmuls_after_jax_started_changes_nothing(monkeypatch):
    jnp.zeros(1).block_until_ready()  # JAX runs in this process
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    with pytest.warns(UserWarning, match="single_threaded_matmuls: JAX's backends are already running"):
        assert mbjax.config.single_threaded_matmuls() is False
    assert "XLA_FLAGS" not in os.environ
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")  # the user's own setting is kept
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mbjax.config.single_threaded_matmuls() is False
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"
    with pytest.raises(TypeError):
        mbjax.config.single_threaded_matmuls(True)  # it takes no argument


def test_faster_compiles_after_jax_started_changes_nothing(monkeypatch):
    jnp.zeros(1).block_until_ready()  # JAX runs in this process: XLA read its flags already
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=1")
    monkeypatch.delenv("MBJAX_XLA_DEFAULTS", raising=False)
    assert mbjax.config.faster_compiles() is False
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=1"
    with pytest.raises(TypeError):
        mbjax.config.faster_compiles(True)  # it takes no argument
