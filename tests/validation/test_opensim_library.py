"""Every model of OpenSim's model library, loaded by mbjax and compared with OpenSim 4.6 itself.

The library (github.com/opensim-org/opensim-models) is not vendored: point ``OPENSIM_MODELS_DIR``
at a checkout (the folder holding ``Models/``); the tests skip when it is unset.  Every model is
loaded as written (:data:`OPT_OUTS` is empty; the Schutte muscles of wrist.osim are compared with
OpenSim's in tests/validation/test_schutte_opensim.py).  Point-on-line constraints
(BouncingBlock) are eliminated as load_osim does by default: OpenSim is given mbjax's solved
dependent coordinates too, and its position errors (``State.getQErr``) must vanish there.  Contact, bushing and point-to-point forces load as force elements
(compared with OpenSim's in tests/validation/test_forces_opensim.py).

At a few random poses inside the coordinate ranges (locked coordinates at their defaults, coupled
ones from OpenSim's own coupler functions):

* every OpenSim body's transform in ground equals mbjax's (``body_poses``);
* every muscle's path length (wrapping stripped from both, see the test) equals ``Muscle.getLength`` and mbjax's moment arms equal ``-dL/dq``
  by Richardson-extrapolated central differences of OpenSim's lengths
  (:class:`~mbjax.opensim.opensim_reference.OpenSimReference`);
* for models without coordinate couplers (so mbjax's ``q`` is OpenSim's minus the locked
  coordinates, whose speeds are zero): the mass matrix equals ``N⁻ᵀ M_u N⁻¹`` and inverse dynamics
  (gravity only: every OpenSim force switched off) ``N⁻ᵀ τ_u``, with OpenSim's ``calcM`` and
  ``InverseDynamicsSolver`` in its generalized speeds ``u`` and ``N`` Simbody's ``q̇ = N u``
  (identity except Ball/Free/Ellipsoid rotations, whose ``u`` is an angular velocity).  Where
  ``N ≠ I`` the speeds are zero (``u̇ = N⁻¹ q̈`` exactly).

One line per model and a total ``N of M load and agree`` are printed at the end of the module.
The large models (many muscles or wrapping) are in the ``extended`` group.
"""

from __future__ import annotations

import glob
import os
import warnings
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

from mbjax import body_poses, inverse_dynamics, mass_matrix  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.opensim.model.osim_point_on_line import dependent_values  # noqa: E402
from mbjax.muscles import moment_arms, muscle_lengths  # noqa: E402
from _osim_models import strip_wrapping  # noqa: E402

ROOT = os.environ.get("OPENSIM_MODELS_DIR", "")
FILES = sorted(os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, "Models", "**", "*.osim"), recursive=True)) if ROOT else []
#: the explicit opt-outs (as in tools/osim_library_survey.py)
OPT_OUTS: dict = {}
#: compile-heavy models (many muscles, wrapping): extended group
HEAVY = ("Gait2392", "Gait2354", "Hamner", "Rajagopal", "Jumper", "ToyLanding", "Leg39", "Leg6Dof9Musc")
N_POSES = 2
TOL = dict(pose=1e-12, length=1e-9, arm=1e-7, mass=1e-10, tau=1e-9, qerr=1e-12)
RESULTS: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    if not RESULTS:
        return
    tr = request.config.pluginmanager.getplugin("terminalreporter")
    write = tr.write_line if tr is not None else print
    write("")
    write("OpenSim model library, mbjax vs OpenSim 4.6:")
    for rel in sorted(RESULTS):
        write(f"  {rel}: {RESULTS[rel]}")
    ok = sum(r.startswith("agree") for r in RESULTS.values())
    write(f"  {ok} of {len(RESULTS)} load and agree (of {len(FILES)} in the library)")


def _params():
    if not FILES:
        return [pytest.param(None, marks=pytest.mark.skip(reason="set OPENSIM_MODELS_DIR to a checkout of "
                                                              "opensim-org/opensim-models"))]
    return [pytest.param(f, marks=pytest.mark.extended) if any(h in f for h in HEAVY) else f for f in FILES]


def _poses(model, n, seed, span=0.8):
    info = model.osim
    lo = np.maximum(np.asarray(info.lower), -3.0)
    hi = np.minimum(np.asarray(info.upper), 3.0)
    mid = 0.5 * (lo + hi)
    rng = np.random.default_rng(seed)
    return mid + span * 0.5 * (hi - lo) * rng.uniform(-1, 1, size=(n, lo.size))


def _vec(x):
    return np.array([x.get(i) for i in range(x.size())])


class _Dynamics:
    """OpenSim's M(q) and gravity-only inverse dynamics, in mbjax's coordinates (see module doc)."""

    def __init__(self, path):
        self.model = osim.Model(path)
        for f in self.model.getForceSet():
            f.set_appliesForce(False)
        self.state = self.model.initSystem()
        self.matter = self.model.getMatterSubsystem()
        self.coords = {c.getName(): c for c in self.model.getCoordinateSet()}
        # each coordinate's slot in the state's q (the one that moves when the coordinate is set)
        self.tree = [""] * self.state.getNQ()
        for name, c in self.coords.items():
            before, v = _vec(self.state.getQ()), c.getValue(self.state)
            c.setValue(self.state, v + 0.5, False)
            moved = np.nonzero(_vec(self.state.getQ()) != before)[0]
            if len(moved) == 1:  # a locked coordinate does not move (and is not in mbjax's q)
                self.tree[moved[0]] = name
            c.setValue(self.state, v, False)

    def _n_inverse(self):
        """``N⁻¹`` as an ``(nu, nq)`` matrix (Simbody keeps a spare 4th q for Euler-angle Ball/Free)."""
        nq, nu = self.state.getNQ(), self.state.getNU()
        out = np.zeros((nu, nq))
        for k in range(nq):
            e = osim.Vector(nq, 0.0)
            e.set(k, 1.0)
            u = osim.Vector(nu, 0.0)
            self.matter.multiplyByNInv(self.state, False, e, u)
            out[:, k] = _vec(u)
        return out

    def __call__(self, names, q, qd, qdd):
        for n, v in zip(names, q):
            self.coords[n].setValue(self.state, float(v), False)
        self.model.realizePosition(self.state)
        ninv = self._n_inverse()
        idx = [self.tree.index(n) for n in names]
        full = lambda v: np.bincount(idx, weights=v, minlength=len(self.tree))  # noqa: E731
        if ninv.shape[0] != ninv.shape[1] or not np.array_equal(ninv, np.eye(len(ninv))):
            qd = np.zeros_like(qd)
        self.state.setU(osim.Vector(list(ninv @ full(qd))))
        self.model.realizeVelocity(self.state)
        m = osim.Matrix()
        self.matter.calcM(self.state, m)
        m_u = np.array([[m.get(i, j) for j in range(m.ncol())] for i in range(m.nrow())])
        tau_u = _vec(osim.InverseDynamicsSolver(self.model).solve(self.state, osim.Vector(list(ninv @ full(qdd)))))
        m_q = ninv.T @ m_u @ ninv
        return m_q[np.ix_(idx, idx)], (ninv.T @ tau_u)[idx], qd


@pytest.mark.parametrize("rel", _params())
def test_library_model_matches_opensim(rel, tmp_path):
    _compare(rel, os.path.join(ROOT, rel), tmp_path)


@pytest.mark.parametrize("name", ["double_pendulum", "gait10dof18musc", "gait2354", "gait2392"])
def test_shipped_example_matches_opensim(name, tmp_path):
    """The library models shipped in the wheel (``mbjax.models.load(name)``), without OPENSIM_MODELS_DIR."""
    import mbjax

    _compare(f"shipped:{name}", mbjax.models.model_path(name), tmp_path)


def _compare(rel, source, tmp_path):
    # straight-line paths (wrapping is compared with OpenSim in test_wrapping_opensim.py; wrapped
    # paths cost minutes of compilation per model)
    path = strip_wrapping(source, str(tmp_path / os.path.basename(source)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_osim(path, **OPT_OUTS)
    except NotImplementedError as e:
        RESULTS[rel] = f"refused: {str(e).split(': ', 2)[-1][:160]}"
        pytest.skip(f"mbjax refuses {rel}: {e}")
    names = model.coordinate_names
    info = model.osim
    coupled = any(role == "dependent" for _, role in info.roles)
    # eliminated point-on-line coordinates: a narrower span keeps BouncingBlock's yRotation (range
    # ±2) off the FreeJoint's gimbal lock at ±π/2, where the implicit solve is singular
    qs = _poses(model, N_POSES, zlib.crc32(rel.encode()), span=0.5 if info.eliminated else 0.8)
    worst = dict(pose=0.0, length=0.0, arm=0.0, mass=0.0, tau=0.0)
    if info.eliminated:
        worst["qerr"] = 0.0

    ref = OpenSimReference(path)
    poses = np.asarray(jax.jit(jax.vmap(body_poses, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    muscles = ref.muscle_names()
    if muscles:
        index = {n: i for i, n in enumerate(model.muscle_names)}
        order = [index[n] for n in muscles]
        ml = np.asarray(jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(qs)))[:, order]
        mr = np.asarray(jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, jnp.asarray(qs)))[:, :, order]
    for k, q in enumerate(qs):
        ref.set(names, q)
        if info.eliminated:  # OpenSim given mbjax's solved dependent coordinates as well
            dep = {c: float(v) for c, v in dependent_values(model, jnp.asarray(q)).items()}
            ref.set(list(names) + list(dep), list(q) + list(dep.values()))
            qerr = ref.state.getQErr()
            worst["qerr"] = max(worst["qerr"], max([abs(qerr.get(i)) for i in range(qerr.size())], default=0.0))
        for b in ref.model.getBodySet():
            r, p = ref.body_pose(b.getName())
            t = poses[k, model.body_index(b.getName())]
            worst["pose"] = max(worst["pose"], np.abs(t[:3, :3] - r).max(), np.abs(t[:3, 3] - p).max())
        if muscles:
            worst["length"] = max(worst["length"], np.abs(ref.lengths(names, q) - ml[k]).max())
            r_fd = np.array([ref.moment_arms(names, q, c) for c in names])
            worst["arm"] = max(worst["arm"], np.abs(r_fd - mr[k]).max())
    if not coupled:
        dyn = _Dynamics(path)
        rng = np.random.default_rng(1)
        qd = rng.uniform(-1, 1, qs.shape)
        qdd = rng.uniform(-1, 1, qs.shape)
        mm = jax.jit(jax.vmap(mass_matrix, in_axes=(None, 0)))
        idyn = jax.jit(jax.vmap(inverse_dynamics, in_axes=(None, 0, 0, 0)))
        refs = [dyn(names, q, v, a) for q, v, a in zip(qs, qd, qdd)]
        qd = np.array([r[2] for r in refs])
        m_mb = np.asarray(mm(model, jnp.asarray(qs)))
        tau_mb = np.asarray(idyn(model, jnp.asarray(qs), jnp.asarray(qd), jnp.asarray(qdd)))
        for (m_os, tau_os, _), m, tau in zip(refs, m_mb, tau_mb):
            worst["mass"] = max(worst["mass"], np.abs(m - m_os).max() / max(1.0, np.abs(m_os).max()))
            worst["tau"] = max(worst["tau"], np.abs(tau - tau_os).max() / max(1.0, np.abs(tau_os).max()))
    checked = "" if not coupled else " (coupled: no M/ID)"
    line = ", ".join(f"{k} {v:.1e}" for k, v in worst.items()) + checked
    bad = [k for k, v in worst.items() if not v <= TOL[k]]
    RESULTS[rel] = ("agree: " if not bad else f"DISAGREE ({', '.join(bad)}): ") + line
    assert not bad, f"{rel}: {line}"


@pytest.mark.parametrize("joint", ["BallJoint", "EllipsoidJoint", "FreeJoint", "GimbalJoint", "PlanarJoint",
                                   "UniversalJoint"])
def test_synthetic_joint_models_match_opensim(tmp_path, joint):
    """The hand-computed transforms of tests/test_osim_joints.py (which mbjax matches) are OpenSim's."""
    from test_osim_joints import JOINTS, _poses as joint_poses, hand_transform, write_joint_model

    ref = OpenSimReference(write_joint_model(tmp_path, joint))
    names = JOINTS[joint][0]
    for q in joint_poses(4, len(names)):
        ref.set(names, q)
        r, p = ref.body_pose("b")
        t = hand_transform(joint, q)
        np.testing.assert_allclose(r, t[:3, :3], atol=1e-14, rtol=0)
        np.testing.assert_allclose(p, t[:3, 3], atol=1e-14, rtol=0)
