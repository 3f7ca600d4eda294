"""Andrews' squeezing mechanism (Ehsani §4-4 B, Eq. 199; Hairer & Wanner, Solving ODE II §VII.7).

Seven planar bodies K1..K7 with revolute joints, one degree of freedom, three closed loops.  The
loops are cut so the bodies form a tree whose joint variables are the Test Set's seven angles
``q = [β, Θ, γ, Φ, δ, Ω, ε]`` (body frames rotate about z):

====  ========  ====================  ===========================================================
body  parent    joint variable        geometry (body frame)
====  ========  ====================  ===========================================================
K1    ground    β   (about O)         CoM (ra, 0); joint to K2 at (rr, 0)
K2    K1        Θ   (at (rr, 0))      CoM (-da, 0); loop point E at (-d, 0)
K3    ground    γ   (about B)         CoM (sa, sb); E at (0, -ss); spring point D at (sd, -sc)
K5    ground    δ   (about A)         CoM (ta, tb); joint to K4 at (zt, 0)
K4    K5        Φ                     CoM (0, -(e - ea)); E at (0, -e)
K7    ground    ε   (about A)         CoM (ua, ub); joint to K6 at (0, -u)
K6    K7        Ω                     CoM (zf - fa, 0); E at (zf, 0)
====  ========  ====================  ===========================================================

The CoM directions of K3, K5, K7 are not fixed by the Test Set (it has no gravity and only
sa²+sb², ta²+tb², ua²+ub² enter M); the ones above are a documented choice.  Applied forces: the
drive torque ``mom`` on K1 and the spring c0 (rest length l0) between D and the fixed point C.

Parameters and consistent initial values: Test Set for IVP Solvers (Mazzia, Magherini, Bari),
``andrews.f``, via ``shared/data/andrews_squeezer.json`` (SI units; xa, ya, xb are negative).

Reduced models with one coordinate ``beta`` (Eq. 199's ``q - θ1 = 0``) put joint maps θ_k(β) on
the tree.  Θ winds with the crank (Θ + β is 2π-periodic), so K2 hangs from K1 through a
zero-inertia body ``K2_unwind`` with the affine map ``-β`` and K2's own joint variable is the
periodic ψ = Θ + β.  Maps: (a) Fourier series fitted over one crank period (the seed's
pre-modelling, :func:`fourier_maps`) or (b) the exact implicit map (:class:`AndrewsImplicitMap`:
the loop closure as a :class:`mbjax.constraints.LoopConstraint` in the deviations from the
Fourier predictor, solved and differentiated by :class:`mbjax.constraints.ImplicitMap`).
:class:`ReducedField` is the one-coordinate ODE (one kinematics pass per evaluation), an
``eqx.Module`` vector field taking the model as diffrax's ``args``, so :func:`mbjax.simulate`
compiles it once; the index-1 DAE baseline is :mod:`mbjax.models.andrews_dae`.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._dynamics import bias_forces
from .._wrenches import generalized_forces
from .._kinematics import joint_values, pose_derivatives
from .._point_kinematics import point_positions
from .._builder import ModelBuilder
from .._model import Model
from ..constraints import ImplicitMap, LoopConstraint
from ..maps import Affine, Fourier
from ..maps._base import AbstractJointMap, replace_fields

# Test Set for IVP Solvers, andrews.f (parameters in SI units)
PARAMS = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.0705, m6=0.00706, m7=0.05498,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0,
    i1=2.194e-06, i2=4.41e-07, i3=5.255e-06, i4=5.667e-07, i5=1.169e-05, i6=5.667e-07, i7=1.912e-05,
    d=0.028, da=0.0115, e=0.02, ea=0.01421, rr=0.007, ra=0.00092, l0=0.07785, ss=0.035,
    sa=0.01874, sb=0.01043, sc=0.018, sd=0.02, ta=0.02308, tb=0.00916, u=0.04, ua=0.01228,
    ub=0.00449, zf=0.02, zt=0.04, fa=0.01421, mom=0.033,
)
COORDINATES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
#: consistent initial values of the Test Set (t = 0)
Q0 = np.array([
    -0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
    0.222668390165885884674473185609, 0.487364979543842550225598953530,
    -0.222668390165885884674473185609, 1.23054744454982119249735015568,
])
QDD0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0])
LAMBDA0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122, 0, 0, 0, 0])
T_END = 0.03
#: the seed's start (Ehsani §4-4 B): q = -0.0620 rad, q̇ = 0, over 0.05 s
SEED_Q0, SEED_T_END = -0.0620, 0.05
#: dependent angles solved for in the reduced model (ψ = Θ + β replaces Θ)
DEPENDENT = ("psi", "gamma", "Phi", "delta", "Omega", "epsilon")


def _inertia(i):
    return np.diag([0.5 * i, 0.5 * i, i])  # planar body: only I_zz matters


def _add_bodies(b: ModelBuilder, p: dict, maps: dict) -> ModelBuilder:
    z = [0.0, 0.0, 1.0]
    b.add_body("K1", parent="ground", axis=z, map=maps["beta"], mass=p["m1"], com=[p["ra"], 0, 0],
               inertia=_inertia(p["i1"]))
    if "unwind" in maps:
        b.add_body("K2_unwind", parent="K1", axis=z, map=maps["unwind"], translation=[p["rr"], 0, 0])
        b.add_body("K2", parent="K2_unwind", axis=z, map=maps["Theta"], mass=p["m2"],
                   com=[-p["da"], 0, 0], inertia=_inertia(p["i2"]))
    else:
        b.add_body("K2", parent="K1", axis=z, map=maps["Theta"], translation=[p["rr"], 0, 0],
                   mass=p["m2"], com=[-p["da"], 0, 0], inertia=_inertia(p["i2"]))
    b.add_body("K3", parent="ground", axis=z, map=maps["gamma"], translation=[p["xb"], p["yb"], 0],
               mass=p["m3"], com=[p["sa"], p["sb"], 0], inertia=_inertia(p["i3"]))
    b.add_body("K5", parent="ground", axis=z, map=maps["delta"], translation=[p["xa"], p["ya"], 0],
               mass=p["m5"], com=[p["ta"], p["tb"], 0], inertia=_inertia(p["i5"]))
    b.add_body("K4", parent="K5", axis=z, map=maps["Phi"], translation=[p["zt"], 0, 0],
               mass=p["m4"], com=[0, -(p["e"] - p["ea"]), 0], inertia=_inertia(p["i4"]))
    b.add_body("K7", parent="ground", axis=z, map=maps["epsilon"], translation=[p["xa"], p["ya"], 0],
               mass=p["m7"], com=[p["ua"], p["ub"], 0], inertia=_inertia(p["i7"]))
    b.add_body("K6", parent="K7", axis=z, map=maps["Omega"], translation=[0, -p["u"], 0],
               mass=p["m6"], com=[p["zf"] - p["fa"], 0, 0], inertia=_inertia(p["i6"]))
    return b


def andrews_tree(params: dict | None = None) -> Model:
    """The squeezer as a tree with its loops cut: 7 bodies, 7 free angles (Test Set order)."""
    p = dict(PARAMS, **(params or {}))
    b = ModelBuilder(COORDINATES, gravity=[0.0, 0.0, 0.0])
    return _add_bodies(b, p, {c: c for c in COORDINATES}).build()


def applied_forces(model: Model, q, params: dict | None = None):
    """Generalized drive torque and spring force Q(q) for any squeezer model (tree or reduced)."""
    p = dict(PARAMS, **(params or {}))
    d_world = point_positions(model, q, "K3", jnp.array([p["sd"], -p["sc"], 0.0]))
    rel = d_world[:2] - jnp.array([p["xc"], p["yc"]])
    length = jnp.sqrt(rel @ rel)
    force = -p["c0"] * (length - p["l0"]) / length * rel
    zero = jnp.zeros(3, d_world.dtype)
    return generalized_forces(
        model,
        q,
        ["K1", "K3"],
        jnp.stack([zero, jnp.array([p["sd"], -p["sc"], 0.0])]),
        jnp.stack([zero, jnp.concatenate([force, jnp.zeros(1, force.dtype)])]),
        jnp.stack([jnp.array([0.0, 0.0, p["mom"]]), zero]),
    )


def generalized_rhs(model: Model, q, qd, params: dict | None = None):
    """f(q, q̇) = Q - N q̇ (the Test Set's right-hand side without the multiplier term)."""
    return applied_forces(model, q, params) - bias_forces(model, q, qd)


# --------------------------------------------------------------------------------------------
# the Test Set's own equations (literal transcription; the independent reference)
# --------------------------------------------------------------------------------------------


def test_set_mass_matrix(q, params: dict | None = None):
    """M(q) of the Test Set (andrews.f), ``(7, 7)``."""
    p = dict(PARAMS, **(params or {}))
    _, th, _, ph, _, om, _ = q
    ee, zz = p["e"] - p["ea"], p["zf"] - p["fa"]
    m = jnp.zeros((7, 7), jnp.result_type(q))
    m = m.at[0, 0].set(p["m1"] * p["ra"] ** 2 + p["m2"] * (p["rr"] ** 2 - 2 * p["da"] * p["rr"] * jnp.cos(th) + p["da"] ** 2) + p["i1"] + p["i2"])
    m = m.at[1, 0].set(p["m2"] * (p["da"] ** 2 - p["da"] * p["rr"] * jnp.cos(th)) + p["i2"])
    m = m.at[1, 1].set(p["m2"] * p["da"] ** 2 + p["i2"])
    m = m.at[2, 2].set(p["m3"] * (p["sa"] ** 2 + p["sb"] ** 2) + p["i3"])
    m = m.at[3, 3].set(p["m4"] * ee**2 + p["i4"])
    m = m.at[4, 3].set(p["m4"] * (ee**2 + p["zt"] * ee * jnp.sin(ph)) + p["i4"])
    m = m.at[4, 4].set(p["m4"] * (p["zt"] ** 2 + 2 * p["zt"] * ee * jnp.sin(ph) + ee**2) + p["m5"] * (p["ta"] ** 2 + p["tb"] ** 2) + p["i4"] + p["i5"])
    m = m.at[5, 5].set(p["m6"] * zz**2 + p["i6"])
    m = m.at[6, 5].set(p["m6"] * (zz**2 - p["u"] * zz * jnp.sin(om)) + p["i6"])
    m = m.at[6, 6].set(p["m6"] * (zz**2 - 2 * p["u"] * zz * jnp.sin(om) + p["u"] ** 2) + p["m7"] * (p["ua"] ** 2 + p["ub"] ** 2) + p["i6"] + p["i7"])
    return m + jnp.tril(m, -1).T


def test_set_rhs(q, qd, params: dict | None = None):
    """f(q, q̇) of the Test Set (andrews.f), ``(7,)``."""
    p = dict(PARAMS, **(params or {}))
    be, th, ga, ph, de, om, ep = q
    bep, thp, _, php, dep, omp, epp = qd
    ee, zz = p["e"] - p["ea"], p["zf"] - p["fa"]
    xd = p["sd"] * jnp.cos(ga) + p["sc"] * jnp.sin(ga) + p["xb"]
    yd = p["sd"] * jnp.sin(ga) - p["sc"] * jnp.cos(ga) + p["yb"]
    lang = jnp.sqrt((xd - p["xc"]) ** 2 + (yd - p["yc"]) ** 2)
    force = -p["c0"] * (lang - p["l0"]) / lang
    fx, fy = force * (xd - p["xc"]), force * (yd - p["yc"])
    return jnp.stack([
        p["mom"] - p["m2"] * p["da"] * p["rr"] * thp * (thp + 2 * bep) * jnp.sin(th),
        p["m2"] * p["da"] * p["rr"] * bep**2 * jnp.sin(th),
        fx * (p["sc"] * jnp.cos(ga) - p["sd"] * jnp.sin(ga)) + fy * (p["sd"] * jnp.cos(ga) + p["sc"] * jnp.sin(ga)),
        p["m4"] * p["zt"] * ee * dep**2 * jnp.cos(ph),
        -p["m4"] * p["zt"] * ee * php * (php + 2 * dep) * jnp.cos(ph),
        -p["m6"] * p["u"] * zz * epp**2 * jnp.cos(om),
        p["m6"] * p["u"] * zz * omp * (omp + 2 * epp) * jnp.cos(om),
    ])


def constraints(q, params: dict | None = None):
    """Loop-closure equations g(q) = 0 of the Test Set, ``(6,)`` (Eq. 199 in relative angles)."""
    p = dict(PARAMS, **(params or {}))
    be, th, ga, ph, de, om, ep = q
    ex = p["rr"] * jnp.cos(be) - p["d"] * jnp.cos(be + th)
    ey = p["rr"] * jnp.sin(be) - p["d"] * jnp.sin(be + th)
    return jnp.stack([
        ex - p["ss"] * jnp.sin(ga) - p["xb"],
        ey + p["ss"] * jnp.cos(ga) - p["yb"],
        ex - p["e"] * jnp.sin(ph + de) - p["zt"] * jnp.cos(de) - p["xa"],
        ey + p["e"] * jnp.cos(ph + de) - p["zt"] * jnp.sin(de) - p["ya"],
        ex - p["zf"] * jnp.cos(om + ep) - p["u"] * jnp.sin(ep) - p["xa"],
        ey - p["zf"] * jnp.sin(om + ep) + p["u"] * jnp.cos(ep) - p["ya"],
    ])


# --------------------------------------------------------------------------------------------
# solving the loops: θ(β) by continuation (the seed's "empirical information")
# --------------------------------------------------------------------------------------------


def _full_angles(beta, dep):
    """[β, Θ, γ, Φ, δ, Ω, ε] from β and the dependent angles [ψ, γ, Φ, δ, Ω, ε] (Θ = ψ - β)."""
    return jnp.concatenate([jnp.atleast_1d(beta), jnp.atleast_1d(dep[0] - beta), dep[1:]])


def _residual(dep, beta, params=None):
    return constraints(_full_angles(beta, dep), params)


def _newton(beta, guess, params=None, iterations: int = 8):
    def body(x, _):
        r = _residual(x, beta, params)
        j = jax.jacfwd(_residual)(x, beta, params)
        return x - jnp.linalg.solve(j, r), None

    x, _ = jax.lax.scan(body, guess, None, length=iterations)
    return x


@jax.jit
def _continuation(b0, x0, fine, params=None):
    x0 = _newton(b0, x0, params)

    def step(x, b):
        x = _newton(b, x, params, 6)
        return x, x

    return jax.lax.scan(step, x0, fine)[1]


def sample_dependent(betas, params: dict | None = None, start=None, substeps: int = 4):
    """Dependent angles [ψ, γ, Φ, δ, Ω, ε] at increasing ``betas`` by Newton continuation.

    Starts from the Test Set's consistent configuration (``start`` = (β, dependent angles)) and
    walks in small steps, so every sample lies on the assembly branch of the initial state.
    """
    betas = np.asarray(betas, dtype=float)
    if start is None:
        q0 = Q0
        start = (q0[0], np.concatenate([[q0[1] + q0[0]], q0[2:]]))
    b0, x0 = float(start[0]), jnp.asarray(start[1], dtype=float)
    path = np.concatenate([[b0], betas])
    fine = np.concatenate([np.linspace(path[k], path[k + 1], substeps + 1)[1:] for k in range(len(path) - 1)])
    xs = np.asarray(_continuation(jnp.asarray(b0), x0, jnp.asarray(fine), params))
    xs = xs[substeps - 1 :: substeps]
    res = np.max(np.abs(np.asarray(jax.vmap(lambda x, b: _residual(x, b, params))(jnp.asarray(xs), jnp.asarray(betas)))))
    if not res < 1e-10:
        raise RuntimeError(f"Andrews: loop continuation lost the assembly (max residual {res:.2e})")
    return xs


def fourier_maps(n_harmonics: int = 12, step: float = 0.01, params: dict | None = None):
    """Fourier pre-modelling of the dependent angles over one crank period (Ehsani §4-4 B).

    Samples θ(β) every ``step`` rad over [β0, β0 + 2π] (the seed uses 0.01) by Newton continuation
    and fits ``mbjax.maps.Fourier`` with ω = 1 (the period of the crank is exactly 2π), policy
    ``"extrapolate"`` (the series is periodic).  Returns ``(maps dict, samples, max residuals)``.
    """
    b0 = float(Q0[0])
    betas = b0 + np.arange(0.0, 2 * np.pi + 0.5 * step, step)
    xs = sample_dependent(betas, params)
    wrap = xs[-1] - xs[0]
    if np.max(np.abs(wrap)) > 1e-8 and abs(betas[-1] - b0 - 2 * np.pi) < 1e-12:
        raise RuntimeError(f"Andrews: dependent angles are not 2π-periodic in β (jump {wrap})")
    maps, residuals = {}, {}
    for k, name in enumerate(DEPENDENT):
        fm = Fourier.fit("beta", betas, xs[:, k], n_harmonics, omega=1.0, policy="extrapolate")
        maps[name] = fm
        f_vals = np.asarray(jax.vmap(lambda b: fm.local(jnp.reshape(b, (1, 1)))[0][0])(jnp.asarray(betas)))
        residuals[name] = float(np.max(np.abs(f_vals - xs[:, k])))
    return maps, (betas, xs), residuals


def _predictor_stack(predictors: dict) -> Fourier:
    """The six Fourier predictors of :data:`DEPENDENT` as one stacked ``Fourier`` family."""
    return Fourier.stack([predictors[n] for n in DEPENDENT])


def _loop_residual(predictor, dev, q):
    """g(δ, β) of the loop in the deviations δ = θ - P(β) from the Fourier predictor P."""
    beta = q[0]
    x = predictor.value(jnp.broadcast_to(q, (len(DEPENDENT), 1))) + dev
    return _residual(x, beta)


def andrews_loop(predictors: dict, **options) -> LoopConstraint:
    """The squeezer's loop closure as a :class:`mbjax.constraints.LoopConstraint` in β.

    The unknowns are the deviations δ = θ - P(β) of the dependent angles [ψ, γ, Φ, δ, Ω, ε] from
    their Fourier predictors P (``predictors``, e.g. :func:`fourier_maps`); the predictor
    coefficients are the constraint's (differentiable) parameters.  Because P is accurate to
    ~1e-8 rad over the whole crank period, one Newton solve from δ = 0 converges at any β
    (``continuation=0``): no continuation path from a reference is needed, and β may wind any
    number of turns.  ``options`` go to ``LoopConstraint`` (``tol``, ``min_rcond``, ...).
    """
    opts = dict(continuation=0)
    opts.update(options)
    b0 = float(Q0[0])
    return LoopConstraint(_loop_residual, _predictor_stack(predictors), ("beta",),
                          tuple("d_" + n for n in DEPENDENT), [b0], np.zeros(len(DEPENDENT)), **opts)


class AndrewsImplicitMap(AbstractJointMap):
    """Exact joint maps θ_k(β) of the squeezer, from the loop equations g(β, θ) = 0.

    θ(β) = P(β) + δ(β): the Fourier predictor P plus the deviation δ solved by
    :class:`mbjax.constraints.ImplicitMap` on :func:`andrews_loop` (checked optimistix Newton;
    ∇δ and H_δ by autodiff through the implicit-function custom JVP, ``method="implicit"``, or
    by the literal projector recursion of Eq. 102-120, ``method="projection"``, equal to
    rounding and slower per evaluation).  A stack of such maps shares one loop solve;
    ``component`` picks the dependent angle (index into :data:`DEPENDENT`).  A failed solve or a
    near-singular ∂g/∂θ raises (``eqx.error_if``, the constraints' policy).
    """

    loop: ImplicitMap  # the loop's ImplicitMap stacked over all six deviations
    component: tuple[int, ...] = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 1

    def __init__(self, predictors: dict | None, component: int, loop: LoopConstraint | None = None,
                 method: str = "implicit"):
        if loop is None:
            if predictors is None:
                raise ValueError("AndrewsImplicitMap: give the Fourier predictors or a loop constraint")
            loop = andrews_loop(predictors)
        self.loop = ImplicitMap.stack([ImplicitMap(loop, j, method) for j in range(len(DEPENDENT))])
        self.component = (int(component),)
        self.coordinates = (("beta",),)

    def group_key(self):
        return (type(self), id(self.loop.constraint), self.loop.method)

    @classmethod
    def stack(cls, maps: Sequence["AndrewsImplicitMap"]):
        maps = list(maps)
        if any(m.loop.constraint is not maps[0].loop.constraint or m.loop.method != maps[0].loop.method for m in maps):
            raise ValueError("AndrewsImplicitMap.stack: maps of different loop constraints or methods do not stack")
        return replace_fields(
            maps[0],
            component=tuple(c for m in maps for c in m.component),
            coordinates=tuple(c for m in maps for c in m.coordinates),
        )

    @property
    def predictor(self) -> Fourier:
        return self.loop.constraint.params

    def _predict(self, beta):
        return self.predictor.value(jnp.broadcast_to(jnp.reshape(beta, (1, 1)), (len(DEPENDENT), 1)))

    def solve(self, beta):
        """All six dependent angles at ``beta`` with first and second derivatives ``(6,)`` each."""
        b = jnp.reshape(beta, (1,))
        p, pg, ph = self.predictor.local(jnp.broadcast_to(b, (len(DEPENDENT), 1)))
        d, dg, dh = self.loop.loop_values(b)
        return p + d, pg[:, 0] + dg[:, 0], ph[:, 0, 0] + dh[:, 0, 0]

    def local(self, x):
        # every map of the family reads the single coordinate β, so all rows share one solve
        comp = np.asarray(self.component)
        f, g, h = self.solve(x[0, 0])
        return f[comp], g[comp][:, None], h[comp][:, None, None]


def andrews_reduced(kind: str = "implicit", n_harmonics: int = 12, params: dict | None = None, fit=None):
    """One-coordinate squeezer (q = β) with joint maps θ_k(β): ``kind`` = ``"fourier"`` or ``"implicit"``.

    ``fit`` may pass a precomputed :func:`fourier_maps` result.  Returns ``(model, fit)``.
    """
    if params:
        raise NotImplementedError("andrews_reduced: the loop equations use the Test Set parameters")
    p = dict(PARAMS)
    fit = fourier_maps(n_harmonics) if fit is None else fit
    fmaps = fit[0]
    if kind == "fourier":
        maps = {n: fmaps[n] for n in DEPENDENT}
    elif kind == "implicit":
        loop = andrews_loop(fmaps)
        maps = {n: AndrewsImplicitMap(None, k, loop) for k, n in enumerate(DEPENDENT)}
    else:
        raise ValueError(f"andrews_reduced: kind must be 'fourier' or 'implicit', got {kind!r}")
    maps = dict(maps, beta="beta", unwind=Affine("beta", [-1.0]), Theta=maps["psi"])
    b = ModelBuilder(("beta",), gravity=[0.0, 0.0, 0.0])
    return _add_bodies(b, p, maps).build(), fit


class ReducedField(eqx.Module):
    """ODE ``(t, (q, q̇), model) -> (q̇, q̈)`` of a one-coordinate squeezer (q = β).

    With one coordinate, Lagrange's equation is M(β) β̈ + C(β) β̇² = Q(β) (+ G), where with the
    world poses T_b, their β-derivatives T'_b, T''_b (:func:`mbjax.pose_derivatives`, Eq. 75/89:
    one evaluation of the joint maps, i.e. one loop solve for implicit maps) and the
    pseudo-inertias J_b (Eq. 131):

        M = Σ_b tr(T'_b J_b T'_bᵀ),   C = ½ M' = Σ_b tr(T''_b J_b T'_bᵀ),
        Q = mom ω_K1 + F_spring · D',   G = Σ_b m_b g · (T'_b c̄_b)

    (ω_K1 = (T'_K1 T_K1ᵀ)_{10}, D' = T'_K3 [d; 1]: virtual work, Eq. 46/161).  That is all the
    arithmetic of the right-hand side: no separate mass-matrix, bias and applied-force passes,
    each re-evaluating the maps.  Equal to the library's ``forward_dynamics`` with
    :func:`applied_forces` to rounding (tested).  The model is diffrax's ``args``.
    """

    def __call__(self, t, y, model):
        q, qd = y
        if q.shape != (1,):
            raise ValueError(f"ReducedField: one coordinate (β) expected, got q of shape {q.shape}")
        return qd, reduced_acceleration(model, q, qd)


def reduced_acceleration(model: Model, q, qd, params: dict | None = None):
    """β̈ of a one-coordinate squeezer model by the one-pass formula of :class:`ReducedField`."""
    p = dict(PARAMS, **(params or {}))
    pd = pose_derivatives(model, q, order=2)
    t, dt, ddt = pd.pose, pd.d_pose[..., 0], pd.dd_pose[..., 0, 0]  # (nb, 4, 4)
    pj = model.pseudo_inertia()
    mass = jnp.einsum("bij,bjk,bik->", dt, pj, dt)
    coriolis = jnp.einsum("bij,bjk,bik->", ddt, pj, dt)
    k1, k3 = model.body_index("K1"), model.body_index("K3")
    d_local = jnp.array([p["sd"], -p["sc"], 0.0, 1.0], dtype=t.dtype)
    d_world = (t[k3] @ d_local)[:2]
    d_prime = (dt[k3] @ d_local)[:2]
    rel = d_world - jnp.array([p["xc"], p["yc"]], dtype=t.dtype)
    length = jnp.sqrt(rel @ rel)
    spring = -p["c0"] * (length - p["l0"]) / length * rel
    omega_k1 = (dt[k1, :3, :3] @ t[k1, :3, :3].T)[1, 0]
    com_h = jnp.concatenate([model.com, jnp.ones_like(model.com[:, :1])], axis=1)
    gravity = jnp.einsum("b,bij,bj,i->", model.mass, dt[:, :3, :], com_h, model.gravity.astype(t.dtype))
    force = p["mom"] * omega_k1 + spring @ d_prime + gravity
    return jnp.reshape((force - coriolis * qd[0] ** 2) / mass, (1,))


def reduced_vector_field(model: Model | None = None) -> ReducedField:
    """:class:`ReducedField` (``model`` is unused: the solve passes it as ``args``)."""
    del model
    return ReducedField()


def full_state(model: Model, beta, beta_dot):
    """All seven angles and rates of a reduced model at (β, β̇): θ = f(β), θ̇ = ∇f β̇.

    For the unwound K2 the Test Set's Θ = ψ - β.
    """
    jv = joint_values(model, jnp.atleast_1d(beta))
    names = model.body_names
    idx = [names.index(n) for n in ("K1", "K2", "K3", "K4", "K5", "K6", "K7")]
    th = jv.value[np.asarray(idx)]
    thd = (jv.gradient @ jnp.atleast_1d(beta_dot))[np.asarray(idx)]
    # tree order [β, Θ, γ, Φ, δ, Ω, ε] from body order [K1, K2(ψ), K3(γ), K4(Φ), K5(δ), K6(Ω), K7(ε)]
    q = jnp.stack([th[0], th[1] - th[0], th[2], th[3], th[4], th[5], th[6]])
    qd = jnp.stack([thd[0], thd[1] - thd[0], thd[2], thd[3], thd[4], thd[5], thd[6]])
    return q, qd
