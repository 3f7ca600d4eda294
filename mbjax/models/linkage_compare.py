"""Point-p kinematics of a :class:`~mbjax.models.linkage.Linkage` by the joint-map model and by the
absolute-coordinate analysis along a Hermite trajectory (shared by tests, experiments, notebook)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import joint_values
from .._point_kinematics import point_acceleration, point_velocity
from ..constraints import absolute
from ..constraints.hermite import hermite
from .linkage import Linkage


def drive(times, trajectory):
    """``(q, q̇, q̈)`` ``(T, n_q)`` of the Hermite drive ``(knots, values, slopes)`` at ``times``."""
    knots, values, slopes = (jnp.asarray(np.asarray(x, dtype=float)) for x in trajectory)
    if values.ndim == 1:
        values, slopes = values[:, None], slopes[:, None]
    return jax.vmap(lambda t: hermite(t, knots, values, slopes))(jnp.asarray(times, dtype=float))


@eqx.filter_jit
def model_point(linkage_model, body: str, point, q, qd, qdd):
    """v and a of ``point`` (body frame) by the closed-form kinematics (Eq. 75, 89 with the maps' ∇f, H)."""
    pts = jnp.asarray(point)[None]
    v = jax.vmap(lambda a, b: point_velocity(linkage_model, a, b, body, pts)[0])(q, qd)
    acc = jax.vmap(lambda a, b, c: point_acceleration(linkage_model, a, b, c, body, pts)[0])(q, qd, qdd)
    return v[:, :2], acc[:, :2]


@eqx.filter_jit
def absolute_point(chain, body: int, point, q, qd, qdd, f0):
    """v and a of ``point`` (body frame, origin at the proximal pivot) by the absolute-coordinate analysis.

    ``f0``: all relative joint angles at the first instant (only to build the first Newton guess).
    """
    guess = chain.from_joint_angles(f0)
    states = absolute.trajectory(chain, q, qd, qdd, guess)
    u = jnp.asarray(point)[:2] - jnp.stack([chain.com[body], 0.0])
    _, v, a = jax.vmap(lambda s: absolute.point_kinematics(chain, s, body, u))(states)
    return v, a


def agreement(x, ref):
    """Significant figures of agreement per sample: -log10(‖x - ref‖ / ‖ref‖).

    ‖ref‖ is floored at 1e-6 of its largest value along the trajectory, so instants where p is at
    rest (v = 0 exactly) do not turn rounding into "no agreement".
    """
    x, ref = np.asarray(x), np.asarray(ref)
    norm = np.linalg.norm(ref, axis=-1)
    err = np.linalg.norm(x - ref, axis=-1) / np.maximum(norm, 1e-6 * norm.max() + 1e-300)
    return -np.log10(np.maximum(err, 1e-17))


def linkage_comparison(linkage: Linkage, chain: absolute.PlanarChain, times, trajectory):
    """``(q, v_model, a_model, v_abs, a_abs)`` along the trajectory."""
    q, qd, qdd = drive(times, trajectory)
    body = linkage.model.body_index(linkage.point_body)
    vm, am = model_point(linkage.model, linkage.point_body, linkage.point, q, qd, qdd)
    f0 = eqx.filter_jit(joint_values)(linkage.model, q[0]).value
    va, aa = absolute_point(chain, body, linkage.point, q, qd, qdd, f0)
    return q, vm, am, va, aa
