"""Seven-segment planar human of Blajer & Czaplicki (2005, Fig. 1), Eq. 3.1-3.3.

Generalized coordinates q = [x_H, y_H, φ1..φ7]: hip position and the absolute segment angles, all
measured from the vertical (counter-clockwise positive, x forward, y up).  Segments (both limbs of
a pair move together, "collateral" motion): 1 trunk (hip H → suprasternale), 2 thighs, 3 shanks,
4 feet, 5 upper arms, 6 forearms + hands, 7 head.  Joints: H hip (1-2), K knee (2-3), A ankle
(3-4), S shoulder (1-5), E elbow (5-6), N neck (1-7).  Segments 2-6 hang "down" at φ = 0 (unit
vector d(φ) = (sin φ, -cos φ)); the trunk and the head point "up" (u(φ) = (-sin φ, cos φ)).
The paper's figure is not in the seed: the segment numbering of 5-7 and the joint locations of
S and N are this module's reading of Fig. 1a.

Anthropometry: de Leva (1996), "Adjustments to Zatsiorsky-Seluyanov's segment inertia
parameters", J. Biomech. 29:1223-1230, Table 4 (males; stature 1.741 m), scaled to a 70 kg
athlete: mass fractions, segment lengths, centre-of-mass positions and the radii of gyration
about the transverse (medio-lateral, somersault) axis.  Paired segments double the mass (same
radius).  Forearm + hand are combined with the parallel-axis theorem.  Distances not in the table
(shoulder height on the trunk, ankle → foot centre of mass, ankle → contact point) are documented
estimates, see :data:`DE_LEVA_MALE` and :func:`default_parameters`.

Reactions come from the general code on the equivalent 3-D :class:`mbjax.Model`
(:func:`planar_human`): :func:`reactions_resolved` (Eq. 2.10 by :func:`mbjax.joint_reactions`),
:func:`reactions_classical` (Eq. 2.11), :func:`minimal_dynamics` (Eq. 2.9 by forward dynamics),
in the paper's sign and layout; Blajer's D, E of the model are
:func:`mbjax.reactions.blajer_matrices`.  The hand-derived Eq. 3.3 (:func:`reactions_eq33`) and
the planar kinematics of Eq. 3.1 (:func:`body_coordinates`) are the independent oracle.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._builder import ModelBuilder
from .._dynamics import forward_dynamics
from .._wrenches import generalized_forces
from .._kinematics import body_poses
from ..maps import Affine
from ..reactions import ExternalLoads, joint_reactions, joint_reactions_classical, reaction_spec

COORDINATES = ("x_H", "y_H", "phi1", "phi2", "phi3", "phi4", "phi5", "phi6", "phi7")
SEGMENTS = ("trunk", "thigh", "shank", "foot", "upper_arm", "forearm", "head")
JOINTS = ("hip", "knee", "ankle", "shoulder", "elbow", "neck")

#: de Leva (1996) Table 4, males: (mass fraction, length [m], CM from the proximal/cranial end
#: as a fraction of the length, transverse radius of gyration as a fraction of the length).
#: Trunk: suprasternale → mid-hip (CM from SUPR); head: vertex → C7 (CM from vertex).
DE_LEVA_MALE = {
    "head": (0.0694, 0.2429, 0.5002, 0.315),
    "trunk": (0.4346, 0.5319, 0.4486, 0.347),
    "upper_arm": (0.0271, 0.2817, 0.5772, 0.269),
    "forearm": (0.0162, 0.2689, 0.4574, 0.265),
    "hand": (0.0061, 0.0862, 0.7900, 0.513),
    "thigh": (0.1416, 0.4222, 0.4095, 0.329),
    "shank": (0.0433, 0.4340, 0.4459, 0.249),
    "foot": (0.0137, 0.2581, 0.4415, 0.245),
}


class Parameters(NamedTuple):
    """Segment masses m_i, moments of inertia J_i about C_i, lengths and CM distances (SI)."""

    mass: jnp.ndarray  # (7,) segments 1..7
    inertia: jnp.ndarray  # (7,) J_Ci
    c: jnp.ndarray  # (7,) distance from the proximal joint (trunk: from H; head: from N) to C_i
    l1: float  # H → N (trunk length)
    l_s: float  # H → S along the trunk
    l2: float
    l3: float
    l5: float
    l_contact: float  # A → contact point on the foot line (ball of the foot)
    gravity: float


def default_parameters(body_mass: float = 70.0, gravity: float = 9.81) -> Parameters:
    """de Leva (1996) male values for a ``body_mass`` athlete.

    Estimates (not in the table): shoulder S at 0.47 m from H along the trunk (≈ acromion level,
    6 cm below suprasternale); foot centre of mass c4 = 0.07 m from the ankle along the foot
    line; trampoline contact at 0.14 m from the ankle (ball of the foot).
    """
    t = DE_LEVA_MALE
    m = lambda k, n=1: n * t[k][0] * body_mass
    j = lambda k, n=1: m(k, n) * (t[k][3] * t[k][1]) ** 2
    # trunk: CM at (1 - 0.4486) of the length from H
    c1 = (1.0 - t["trunk"][2]) * t["trunk"][1]
    # head: CM at (1 - 0.5002) of vertex→C7 from N (C7)
    c7 = (1.0 - t["head"][2]) * t["head"][1]
    # forearm + hand (both sides)
    mf, mh = m("forearm", 2), m("hand", 2)
    lf = t["forearm"][1]
    cf, ch = t["forearm"][2] * lf, lf + t["hand"][2] * t["hand"][1]
    c6 = (mf * cf + mh * ch) / (mf + mh)
    j6 = j("forearm", 2) + mf * (cf - c6) ** 2 + j("hand", 2) + mh * (ch - c6) ** 2
    mass = [m("trunk"), m("thigh", 2), m("shank", 2), m("foot", 2), m("upper_arm", 2), mf + mh, m("head")]
    inertia = [j("trunk"), j("thigh", 2), j("shank", 2), j("foot", 2), j("upper_arm", 2), j6, j("head")]
    c = [
        c1,
        t["thigh"][2] * t["thigh"][1],
        t["shank"][2] * t["shank"][1],
        0.07,
        t["upper_arm"][2] * t["upper_arm"][1],
        c6,
        c7,
    ]
    return Parameters(
        mass=jnp.asarray(mass),
        inertia=jnp.asarray(inertia),
        c=jnp.asarray(c),
        l1=t["trunk"][1],
        l_s=0.47,
        l2=t["thigh"][1],
        l3=t["shank"][1],
        l5=t["upper_arm"][1],
        l_contact=0.14,
        gravity=gravity,
    )


def _down(phi):
    return jnp.stack([jnp.sin(phi), -jnp.cos(phi)])


def _up(phi):
    return jnp.stack([-jnp.sin(phi), jnp.cos(phi)])


# --------------------------------------------------------------------------------------------
# planar kinematics (Eq. 3.1) and the analytic Eq. 3.3 (the oracle)
# --------------------------------------------------------------------------------------------


def body_coordinates(par: Parameters, q):
    """p = g(q) = [x_i, y_i, θ_i]_{i=1..7} (Eq. 3.1 at z = 0): centres of mass and segment angles."""
    q = jnp.asarray(q)
    h, phi, c = q[:2], q[2:], par.c
    knee = h + par.l2 * _down(phi[1])
    ankle = knee + par.l3 * _down(phi[2])
    shoulder = h + par.l_s * _up(phi[0])
    elbow = shoulder + par.l5 * _down(phi[4])
    neck = h + par.l1 * _up(phi[0])
    centres = [
        h + c[0] * _up(phi[0]),
        h + c[1] * _down(phi[1]),
        knee + c[2] * _down(phi[2]),
        ankle + c[3] * _down(phi[3]),
        shoulder + c[4] * _down(phi[4]),
        elbow + c[5] * _down(phi[5]),
        neck + c[6] * _up(phi[6]),
    ]
    return jnp.concatenate([jnp.concatenate([x, phi[i : i + 1]]) for i, x in enumerate(centres)])


def contact_point(par: Parameters, q):
    """World position of the trampoline contact on the foot line."""
    p = body_coordinates(par, q).reshape(7, 3)
    ankle = p[3, :2] - par.c[3] * _down(q[5])
    return ankle + par.l_contact * _down(q[5])


def reactions_eq33(par: Parameters, q, qd, qdd, force):
    """The analytic λ1..λ6 of Eq. 3.3 (hip, knee, ankle; x then y), transcribed term by term."""
    m2, m3, m4 = par.mass[1], par.mass[2], par.mass[3]
    c2, c3, c4 = par.c[1], par.c[2], par.c[3]
    l2, l3, g = par.l2, par.l3, par.gravity
    rx, ry = force[0], force[1]
    xdd, ydd = qdd[0], qdd[1]
    p2, p3, p4 = q[3], q[4], q[5]
    d2, d3, d4 = qd[3], qd[4], qd[5]
    a2, a3, a4 = qdd[3], qdd[4], qdd[5]
    s2, s3, s4, k2, k3, k4 = jnp.sin(p2), jnp.sin(p3), jnp.sin(p4), jnp.cos(p2), jnp.cos(p3), jnp.cos(p4)
    ax2 = xdd + c2 * a2 * k2 - c2 * d2**2 * s2
    ax3 = xdd + l2 * a2 * k2 + c3 * a3 * k3 - l2 * d2**2 * s2 - c3 * d3**2 * s3
    ax4 = xdd + l2 * a2 * k2 + l3 * a3 * k3 + c4 * a4 * k4 - l2 * d2**2 * s2 - l3 * d3**2 * s3 - c4 * d4**2 * s4
    ay2 = ydd + c2 * a2 * s2 + c2 * d2**2 * k2
    ay3 = ydd + l2 * a2 * s2 + c3 * a3 * s3 + l2 * d2**2 * k2 + c3 * d3**2 * k3
    ay4 = ydd + l2 * a2 * s2 + l3 * a3 * s3 + c4 * a4 * s4 + l2 * d2**2 * k2 + l3 * d3**2 * k3 + c4 * d4**2 * k4
    lam1 = rx - m2 * ax2 - m3 * ax3 - m4 * ax4
    lam2 = ry - (m2 + m3 + m4) * g - m2 * ay2 - m3 * ay3 - m4 * ay4
    lam3 = rx - m3 * ax3 - m4 * ax4
    lam4 = ry - (m3 + m4) * g - m3 * ay3 - m4 * ay4
    lam5 = rx - m4 * ax4
    lam6 = ry - m4 * g - m4 * ay4
    return jnp.stack([lam1, lam2, lam3, lam4, lam5, lam6])


# --------------------------------------------------------------------------------------------
# the same human as an mbjax Model (3-D, motion in the x-y plane, rotations about z)
# --------------------------------------------------------------------------------------------

BODIES = ("pelvis_x", "pelvis_y") + SEGMENTS
#: child segment of each joint (hip, knee, ankle, shoulder, elbow, neck)
JOINT_CHILD = dict(zip(JOINTS, SEGMENTS[1:]))


@functools.lru_cache(maxsize=None)
def _structure():
    """Topology, axes and maps (parameter-free); the parameters are set by :func:`planar_human`."""
    b = ModelBuilder(COORDINATES, gravity=[0.0, -9.81, 0.0])
    ez = [0.0, 0.0, 1.0]
    b.add_body("pelvis_x", joint="prismatic", axis=[1.0, 0.0, 0.0], map="x_H")
    b.add_body("pelvis_y", parent="pelvis_x", joint="prismatic", axis=[0.0, 1.0, 0.0], map="y_H")
    rel = lambda child, parent: Affine([child, parent], [1.0, -1.0])
    parent = {"trunk": "pelvis_y", "thigh": "trunk", "shank": "thigh", "foot": "shank", "upper_arm": "trunk",
              "forearm": "upper_arm", "head": "trunk"}
    maps = {"trunk": "phi1", "thigh": rel("phi2", "phi1"), "shank": rel("phi3", "phi2"), "foot": rel("phi4", "phi3"),
            "upper_arm": rel("phi5", "phi1"), "forearm": rel("phi6", "phi5"), "head": rel("phi7", "phi1")}
    for name in SEGMENTS:
        b.add_body(name, parent=parent[name], axis=ez, map=maps[name], mass=1.0, inertia=np.eye(3))
    return b.build()


def planar_human(par: Parameters | None = None):
    """:class:`mbjax.Model` of Fig. 1a: q = [x_H, y_H, φ1..φ7], relative joint angles as
    ``Affine`` maps φ_child - φ_parent.  Bodies: ``pelvis_x``, ``pelvis_y`` (zero inertia, the
    hip's two slides), then ``trunk`` (frame origin at H) and the six segments; each segment's
    frame origin is its proximal joint, so ``joint_reactions`` at ``thigh``, ``shank``, ``foot``
    are the hip, knee and ankle reactions (Eq. 3.3 with the parent-on-child sign, -λ).

    The parameters enter as array leaves only (``par`` may be traced: jit/grad over it work);
    slender segments along their y axis have I_zz = I_xx = J and I_yy = 0.1 J (unused in the plane).
    """
    par = default_parameters() if par is None else par
    model = _structure()
    dtype = model.mass.dtype
    mass = jnp.concatenate([jnp.zeros(2, dtype), jnp.asarray(par.mass, dtype)])
    j = jnp.asarray(par.inertia, dtype)
    diag = jnp.concatenate([jnp.zeros((2, 3), dtype), jnp.stack([j, 0.1 * j, j], 1)])
    inertia = diag[:, :, None] * jnp.eye(3, dtype=dtype)
    c = jnp.asarray(par.c, dtype)
    sign = jnp.asarray([1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0], dtype)  # trunk, head point up
    com = jnp.zeros((9, 3), dtype).at[2:, 1].set(sign * c)
    f = lambda x: jnp.asarray(x, dtype)
    y_offset = jnp.stack([f(0.0), f(0.0), f(0.0), f(0.0), -f(par.l2), -f(par.l3), f(par.l_s), -f(par.l5), f(par.l1)])
    offset = model.offset.at[:, 1, 3].set(y_offset)
    gravity = jnp.stack([f(0.0), -f(par.gravity), f(0.0)])
    return eqx.tree_at(lambda m: (m.mass, m.com, m.inertia, m.offset, m.gravity), model,
                       (mass, com, inertia, offset, gravity))


@functools.lru_cache(maxsize=None)
def spec(joints: tuple[int, ...] = (0, 1, 2)):
    """:class:`mbjax.ReactionSpec` of the joints ``joints`` (indices into :data:`JOINTS`).

    Built on the parameter-free structure (same topology and zero-mass pattern), so it can be
    called under ``jit``."""
    return reaction_spec(_structure(), [JOINT_CHILD[JOINTS[k]] for k in joints])


def loads(par: Parameters, force, torques=None) -> ExternalLoads:
    """Trampoline force ``force = (R_x, R_y)`` at the contact point of the foot and joint torques
    τ ``(6,)`` (H, K, A, S, E, N; +τ e_z on the distal, -τ e_z on the proximal segment)."""
    force = jnp.asarray(force)
    zero = jnp.zeros((), force.dtype)
    bodies = ["foot"]
    points = [jnp.stack([zero, -jnp.asarray(par.l_contact, force.dtype), zero])]
    forces = [jnp.stack([force[0], force[1], zero])]
    moments = [jnp.zeros(3, force.dtype)]
    if torques is not None:
        proximal = ("trunk", "thigh", "shank", "trunk", "upper_arm", "trunk")
        for k, joint in enumerate(JOINTS):
            for body, sgn in ((JOINT_CHILD[joint], 1.0), (proximal[k], -1.0)):
                bodies.append(body)
                points.append(jnp.zeros(3, force.dtype))
                forces.append(jnp.zeros(3, force.dtype))
                moments.append(jnp.stack([zero, zero, sgn * torques[k]]))
    return ExternalLoads(tuple(bodies), jnp.stack(points), jnp.stack(forces), jnp.stack(moments))


def reactions_resolved(par: Parameters, q, qd, qdd, force, torques=None, joints=(0, 1, 2)):
    """λ of Eq. 2.10 (paper's sign and order: x then y per joint) by :func:`mbjax.joint_reactions`
    on :func:`planar_human`: λ_j = -(world force the parent exerts on the child)[:2]."""
    out = joint_reactions(planar_human(par), q, qd, qdd, spec(tuple(joints)), loads(par, force, torques))
    return -out.force[:, :2].reshape(-1)


def reactions_classical(par: Parameters, q, qd, force, torques=None):
    """λ of Eq. 2.11 at all six joints (x, y per joint, paper's sign), by
    :func:`mbjax.reference.joint_reactions_classical` on :func:`planar_human` (all seven joints opened:
    6·7 body coordinates = 9 + 3 (trunk chain) + 6·5); revolute components [F (child axes); ...]."""
    model = planar_human(par)
    sp = reaction_spec(_structure())  # every massive body: the trunk chain and the six joints
    lam = joint_reactions_classical(model, q, qd, sp, loads(par, force, torques))
    rot = body_poses(model, q)[np.asarray(sp.joints[1:]), :3, :3]
    forces = lam[3:].reshape(6, 5)[:, :3]  # child axes
    return jnp.einsum("jab,jb->ja", rot, forces)[:, :2].reshape(-1)


def minimal_dynamics(par: Parameters, q, qd, force, torques=None):
    """q̈ of Eq. 2.9 by :func:`mbjax.forward_dynamics` with Q = generalized force of :func:`loads`."""
    model = planar_human(par)
    ld = loads(par, force, torques)
    gen = generalized_forces(model, q, ld.bodies, ld.points, ld.forces, ld.torques)
    return forward_dynamics(model, q, qd, gen)


# --------------------------------------------------------------------------------------------
# a smooth synthetic back somersault (support on the trampoline, then flight)
# --------------------------------------------------------------------------------------------

SUPPORT_TIME = 0.4
TAKEOFF_SPEED = 6.0  # vertical COM speed at take-off [m/s]
DURATION = 1.6


def _smooth(s):
    """Quintic smoothstep on [0, 1] (C² at both ends)."""
    s = jnp.clip(s, 0.0, 1.0)
    return s**3 * (10.0 - 15.0 * s + 6.0 * s**2)


def _blend(t, keys):
    """C² piecewise-quintic interpolation through keyframes ``[(t_k, v_k), ...]``."""
    out = jnp.asarray(keys[0][1], dtype=jnp.result_type(t, float))
    for (t0, v0), (t1, v1) in zip(keys[:-1], keys[1:]):
        out = out + (v1 - v0) * _smooth((t - t0) / (t1 - t0))
    return out


def trampoline_force(par: Parameters, t):
    """(R_x, R_y) = m_tot a_COM - m_tot g: R_y = A cos²(π t / 2T_s) during support, 0 in flight."""
    m = jnp.sum(par.mass)
    ts = SUPPORT_TIME
    a_y = 2.0 * (TAKEOFF_SPEED + par.gravity * ts) / ts  # amplitude / m so that v_y(T_s) = v0
    a_x = 2.0 * (-0.3) / ts  # 0.3 m/s backward drift at take-off
    shape = jnp.where(t < ts, jnp.cos(0.5 * math.pi * jnp.clip(t, 0.0, ts) / ts) ** 2, 0.0)
    return m * jnp.stack([a_x * shape, a_y * shape])


def _com(par: Parameters, t):
    """Whole-body COM: double integral of R/m + g in support (closed form), ballistic in flight."""
    ts, g = SUPPORT_TIME, par.gravity
    a_y = 2.0 * (TAKEOFF_SPEED + g * ts) / ts
    a_x = 2.0 * (-0.3) / ts

    def support(tt, a, grav):  # ∫∫ (a cos²(π s/2T) - grav) ds ds
        k = math.pi / ts
        return a * (tt**2 / 4.0 + (1.0 - jnp.cos(k * tt)) / (2.0 * k**2)) - grav * tt**2 / 2.0

    def support_v(tt, a, grav):
        k = math.pi / ts
        return a * (tt / 2.0 + jnp.sin(k * tt) / (2.0 * k)) - grav * tt

    y0 = 0.75
    ts_arr = jnp.asarray(ts)
    # jnp.where, not min/max: their derivative at the tie t = T_s would be split in half
    flight = t >= ts
    tc = jnp.where(flight, ts, t)
    tf = jnp.where(flight, t - ts, 0.0)
    x = support(tc, a_x, 0.0) + support_v(ts_arr, a_x, 0.0) * tf
    y = y0 + support(tc, a_y, g) + support_v(ts_arr, a_y, g) * tf - 0.5 * g * tf**2
    return jnp.stack([x, y])


def somersault_angles(t):
    """Absolute segment angles φ1..φ7 ``(7,)``: push-off, arm swing, pike in flight, opening."""
    phi1 = _blend(t, [(0.0, -0.15), (0.25, 0.05), (DURATION, 2.0 * math.pi)])
    hip = _blend(t, [(0.0, 0.9), (0.35, 0.1), (0.85, 1.6), (1.05, 1.6), (1.5, 0.3), (DURATION, 0.3)])
    knee = _blend(t, [(0.0, 1.0), (0.38, 0.05), (1.1, 0.1), (1.5, 0.5), (DURATION, 0.6)])
    ankle = _blend(t, [(0.0, 0.15), (0.38, 0.8), (1.1, 0.8), (1.5, 0.2), (DURATION, 0.1)])
    shoulder = _blend(t, [(0.0, 0.2), (0.35, 2.8), (0.9, 1.6), (1.2, 1.6), (DURATION, 1.0)])
    elbow = _blend(t, [(0.0, 0.3), (0.35, 0.1), (1.0, 0.2), (DURATION, 0.2)])
    neck = _blend(t, [(0.0, 0.0), (0.5, -0.2), (1.3, -0.2), (DURATION, 0.0)])
    phi2 = phi1 + hip
    phi3 = phi2 - knee
    phi4 = phi3 + 0.5 * math.pi + ankle
    phi5 = phi1 + shoulder
    phi6 = phi5 + elbow
    phi7 = phi1 + neck
    return jnp.stack([phi1, phi2, phi3, phi4, phi5, phi6, phi7])


def somersault_q(par: Parameters, t):
    """q(t) with the hip placed so that the whole-body COM follows :func:`_com`."""
    phi = somersault_angles(t)
    q0 = jnp.concatenate([jnp.zeros(2, phi.dtype), phi])
    p = body_coordinates(par, q0).reshape(7, 3)
    com_rel = jnp.sum(par.mass[:, None] * p[:, :2], 0) / jnp.sum(par.mass)  # COM - H
    return q0.at[:2].set(_com(par, t) - com_rel)


def somersault(par: Parameters, t):
    """q, q̇, q̈ (autodiff in time) and the trampoline force at time ``t`` (scalar)."""
    t = jnp.asarray(t, dtype=float)
    q = somersault_q(par, t)
    qd = jax.jacfwd(lambda s: somersault_q(par, s))(t)
    qdd = jax.jacfwd(jax.jacfwd(lambda s: somersault_q(par, s)))(t)
    return q, qd, qdd, trampoline_force(par, t)
