"""Point-p kinematics of a :class:`~mbjax.models.fourbar.Linkage` by the joint-map model and by the
absolute-coordinate analysis along a Hermite trajectory (shared by tests, experiments, notebook)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import joint_values, point_acceleration, point_velocity
from . import absolute
from .hermite import hermite


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


def linkage_comparison(linkage, chain, times, trajectory):
    """``(q, v_model, a_model, v_abs, a_abs)`` along the trajectory."""
    q, qd, qdd = drive(times, trajectory)
    body = linkage.model.body_index(linkage.point_body)
    vm, am = model_point(linkage.model, linkage.point_body, linkage.point, q, qd, qdd)
    f0 = eqx.filter_jit(joint_values)(linkage.model, q[0]).value
    va, aa = absolute_point(chain, body, linkage.point, q, qd, qdd, f0)
    return q, vm, am, va, aa


def plot_point_kinematics(times, comparison, q_labels, method: str, title: str, path: str) -> None:
    """PNG of the drives and |v_p|, |a_p| by the joint-map model (``method``) vs absolute coordinates.

    ``comparison`` is the ``(q, v_model, a_model, v_abs, a_abs)`` of :func:`linkage_comparison`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q, vm, am, va, aa = comparison
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    for j, label in enumerate(q_labels):
        ax[0].plot(times, q[:, j], label=label)
    if len(q_labels) > 1:
        ax[0].legend(fontsize=8)
    else:
        ax[0].set_ylabel(q_labels[0])
    for a, model_val, abs_val, name in ((ax[1], vm, va, "|v_p|"), (ax[2], am, aa, "|a_p|")):
        a.plot(times, np.linalg.norm(model_val, axis=1), lw=3, label=f"mbjax ({method})")
        a.plot(times, np.linalg.norm(abs_val, axis=1), "k:", lw=2, label="absolute coordinates")
        a.set_ylabel(name)
    for a in ax:
        a.set_xlabel("t")
    ax[2].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
