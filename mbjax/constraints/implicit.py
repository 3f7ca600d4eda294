"""Implicit-function joint maps of a closed chain (Ehsani §3-3; implicit function theorem).

:func:`implicit_solve` is ``f(q)`` from the Newton solve wrapped in a ``jax.custom_jvp`` whose
tangent is the implicit function theorem, ``ḟ = -(∂g/∂f)⁻¹ (∂g/∂q q̇ + ∂g/∂p ṗ)`` (p: the
constraint's parameters, e.g. link lengths).  The rule is written in differentiable JAX (it calls
:func:`implicit_solve` itself), so ``jax.jacfwd`` gives ∇f and ``jax.hessian`` gives H, and
reverse mode works too (the tangent is linear).

:class:`ImplicitMap` is the joint-map family that exposes the solved joint variables of one loop
to a :class:`~mbjax.Model`.  All maps built from one constraint stack into a single module that
solves the loop **once** per evaluation and returns the joints it serves; ``method`` picks how ∇f
and H are obtained: ``"projection"`` (Eq. 102-120), ``"implicit"`` (autodiff through the custom
JVP) or ``"molecule"`` (central differences with step ``step``).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..maps._base import AbstractJointMap, replace_fields
from ._constraint import LoopConstraint, checked_constraint, checked_q, solve
from .molecule import molecule_derivatives
from .projection import _projection_derivatives

METHODS = ("projection", "implicit", "molecule")


def implicit_solve(constraint: LoopConstraint, q):
    """f(q) solving g(f, q) = 0 with a custom JVP through the implicit function theorem."""
    checked_constraint(constraint, "implicit_solve")
    q = checked_q(constraint, q, "implicit_solve")
    dyn, static = eqx.partition(constraint, eqx.is_inexact_array)

    @jax.custom_jvp
    def fq(dyn, q):
        return solve(eqx.combine(dyn, static), q)

    @fq.defjvp
    def fq_jvp(primals, tangents):
        dyn, q = primals
        ddyn, dq = tangents
        f = fq(dyn, q)

        def residual(d, qq, ff):
            return eqx.combine(d, static).residual(ff, qq)

        _, r_dot = jax.jvp(lambda d, qq: residual(d, qq, f), (dyn, q), (ddyn, dq))
        g_f = jax.jacfwd(lambda ff: residual(dyn, q, ff))(f)
        return f, -jnp.linalg.solve(g_f, r_dot)

    return fq(dyn, q)


@eqx.filter_jit
def implicit_values(constraint: LoopConstraint, q):
    """``(f, ∇f, H)`` with ∇f = ``jacfwd`` and H = ``jacfwd(jacfwd)`` of :func:`implicit_solve` (one nested trace)."""
    checked_constraint(constraint, "implicit_values")
    q = checked_q(constraint, q, "implicit_values")

    def f_aux(qq):
        f = implicit_solve(constraint, qq)
        return f, f

    def g_aux(qq):
        g, f = jax.jacfwd(f_aux, has_aux=True)(qq)
        return g, (g, f)

    h, (g, f) = jax.jacfwd(g_aux, has_aux=True)(q)
    return f, g, h


@eqx.filter_jit
def loop_values(constraint: LoopConstraint, q, method: str = "projection", step=1e-4):
    """``(f, ∇f, H)`` of all the loop's joint variables at ``q`` by the chosen method."""
    checked_constraint(constraint, "loop_values")
    q = checked_q(constraint, q, "loop_values")
    if method == "projection":
        f = solve(constraint, q)
        return (f, *_projection_derivatives(constraint, f, q))
    if method == "implicit":
        return implicit_values(constraint, q)
    if method == "molecule":
        return molecule_derivatives(constraint, q, step)
    raise ValueError(f"loop_values: unknown closed-chain method {method!r}; supported: {METHODS}")


class ImplicitMap(AbstractJointMap):
    """Joint maps f_j(q) of the joints ``joints`` of one loop ``constraint``.

    Build one map per body with ``ImplicitMap(constraint, joint)`` (joint name or index) and pass it
    to ``ModelBuilder.add_body(map=...)``; maps of one constraint and method stack into one module
    that solves once.  Every map reads all of the constraint's coordinates.
    """

    constraint: LoopConstraint
    step: jnp.ndarray
    joints: tuple[int, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, constraint: LoopConstraint, joint, method: str = "projection", step=1e-4):
        if not isinstance(constraint, LoopConstraint):
            raise ValueError(f"ImplicitMap: constraint must be a LoopConstraint, got {type(constraint).__name__}")
        if method not in METHODS:
            raise ValueError(f"ImplicitMap: unknown method {method!r}; supported: {METHODS}")
        if isinstance(joint, str):
            if joint not in constraint.joints:
                raise ValueError(f"ImplicitMap: joint {joint!r} is not one of the loop's joints {constraint.joints}")
            joint = constraint.joints.index(joint)
        if isinstance(joint, (bool, np.bool_)) or not isinstance(joint, (int, np.integer)):
            raise TypeError(f"ImplicitMap: joint must be a joint name in {constraint.joints} or an integer index, "
                            f"got {joint!r}")
        joint = int(joint)
        if not 0 <= joint < constraint.n_joints:
            raise ValueError(f"ImplicitMap: joint index {joint} out of range for {constraint.n_joints} joints")
        nq = constraint.n_coordinates
        h = np.asarray(step, dtype=float) if not isinstance(step, jax.core.Tracer) else None
        if h is not None:
            if h.shape not in ((), (nq,)):
                raise ValueError(f"ImplicitMap: step must be a scalar or have shape (n_q,) = ({nq},) for coordinates "
                                 f"{constraint.coordinates}, got {h.shape}")
            if not np.all(np.isfinite(h) & (h > 0)):
                raise ValueError(f"ImplicitMap: step (molecule difference step) must be finite and > 0, got {h}")
        self.constraint = constraint
        self.step = jnp.asarray(step, dtype=float)
        self.joints = (joint,)
        self.method = method
        self.coordinates = (constraint.coordinates,)

    def group_key(self):
        # one stack per (constraint object, method): the stack shares one solve
        return (type(self), id(self.constraint), self.method)

    @classmethod
    def stack(cls, maps: Sequence["ImplicitMap"]) -> "ImplicitMap":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        first = maps[0]
        if any(m.constraint is not first.constraint or m.method != first.method for m in maps):
            raise ValueError("ImplicitMap.stack: maps of different constraints or methods do not stack")
        joints = tuple(j for m in maps for j in m.joints)
        return replace_fields(first, joints=joints, coordinates=tuple(c for m in maps for c in m.coordinates))

    def select(self, index: int) -> "ImplicitMap":
        return replace_fields(self, joints=(self.joints[index],), coordinates=(self.coordinates[index],))

    def loop_values(self, q):
        """``(f, ∇f, H)`` of all of the loop's joints at local inputs ``q`` ``(k,)``."""
        return loop_values(self.constraint, q, self.method, self.step)

    def local(self, x):
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.constraint.n_coordinates:
            raise ValueError(
                f"ImplicitMap.local: inputs must have shape (n_maps, {self.constraint.n_coordinates}), got {x.shape}"
            )
        f, g, h = self.loop_values(x[0])  # every map of the stack reads the same coordinates
        idx = np.asarray(self.joints)
        return f[idx], g[idx], h[idx]

    def value(self, x):
        """Map values via the differentiable implicit solve (so autodiff of ``value`` is meaningful)."""
        f = implicit_solve(self.constraint, jnp.asarray(x)[0])
        return f[np.asarray(self.joints)]
