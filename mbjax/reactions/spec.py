"""Inputs and outputs of joint reactions: external loads, the static joint choice, the result.

A *physical joint* (Ehsani §3-1: an empirical multi-dof joint is a chain of 1-dof joints through
zero-inertia bodies) is found by walking up from the named child while the parent has zero mass,
has a single child and is not itself a chosen joint.  Its free motions are spanned by the joint
twists of the chain's moving bodies relative to the physical parent; its static dof is
min(#moving joints, #coordinates read, 6) and it has 6 - dof reaction components.

The prohibited directions Z_c of single revolute / prismatic joints and of welds do not depend on
the pose (child frame, joint point = child frame origin) and are built here once per model
(:func:`fixed_directions`); those of chains are per pose (``resolved.py`` closed form, ``dense.py``
oracle).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._loads import ExternalLoads as ExternalLoads  # noqa: F401  (re-exported)
from .._model import Model
from .._topology import PRISMATIC, REVOLUTE

WELD = "weld"
CHAIN = "chain"


class JointReactions(NamedTuple):
    """Per chosen joint (order of ``spec.names``), the load the parent exerts on the child.

    ``force``/``moment`` ``(nj, 3)``: full transmitted wrench in world axes, moment about
    ``point`` ``(nj, 3)`` = the joint point (child body frame origin) in world coordinates.
    ``local`` ``(nj, 6)``: the same wrench [moment; force] in the child body frame axes.
    ``components``: tuple of ``(m_c,)`` arrays, the reaction components on the prohibited
    directions Z_c (Blajer's λ of Eq. 2.10 with the parent-on-child sign, i.e. -λ).
    ``reaction`` ``(nj, 6)``: the constraint part Z Zᵀ ``local`` (actuation removed).
    """

    force: jnp.ndarray
    moment: jnp.ndarray
    point: jnp.ndarray
    local: jnp.ndarray
    components: tuple
    reaction: jnp.ndarray


@dataclasses.dataclass(frozen=True)
class ReactionSpec:
    """Static choice of joints (hashable).  Build it with :func:`reaction_spec`."""

    joints: tuple[int, ...]  # child body of each physical joint
    names: tuple[str, ...]
    parents: tuple[int, ...]  # physical parent body (-1 = ground)
    chains: tuple[tuple[int, ...], ...]  # bodies from the child up to the physical parent's child
    kinds: tuple[str, ...]  # "revolute" | "prismatic" | "weld" | "chain"
    n_components: tuple[int, ...]  # number of reaction components (6 - dof)
    massive: tuple[int, ...]  # bodies with non-zero mass (rows of the classical formula)
    moving: tuple[tuple[int, ...], ...] = ()  # bodies of each chain that have a joint map
    read: tuple[tuple[int, ...], ...] = ()  # coordinate indices each chain reads (sorted)
    fingerprint: tuple = ()  # the model's topology (see :func:`model_fingerprint`)

    @property
    def n_joints(self) -> int:
        return len(self.joints)


def model_fingerprint(model: Model) -> tuple:
    """Static identity of a model for spec checks: tree, joint types, body and coordinate names,
    which bodies have joint maps (masses are parameters and may be traced: not included)."""
    checked_model(model, "model_fingerprint")
    top = model.topology
    return (top.parents, top.joint_types, top.body_names, top.coordinate_names, top.map_bodies)


def checked_model(model, where: str) -> Model:
    """``model`` if it is an :class:`mbjax.Model`, else ``TypeError`` naming ``where``."""
    if not isinstance(model, Model):
        raise TypeError(f"{where}: model must be an mbjax.Model (e.g. mbjax.models.load(...) or "
                        f"ModelBuilder(...).build()), got {type(model).__name__}")
    return model


def _body_coordinates(model: Model) -> list[set[str]]:
    out: list[set[str]] = [set() for _ in range(model.n_bodies)]
    for family, bodies in zip(model.maps, model.topology.map_bodies):
        for pos, b in enumerate(bodies):
            out[b] = set(family.coordinates[pos])
    return out


def reaction_spec(model: Model, joints=None) -> ReactionSpec:
    """Choose the joints whose reactions are wanted (Eq. 2.3 with z at those joints only).

    ``joints``: child body names/indices; ``None`` = every body with non-zero mass (each is the
    child of one physical joint).  Needs concrete masses (call outside ``jit``, or close over the
    model) because zero-inertia chains are found from them.
    """
    checked_model(model, "reaction_spec")
    try:
        mass = np.asarray(model.mass)
    except Exception as err:  # traced masses
        raise ValueError(
            "reaction_spec needs concrete body masses to find zero-inertia chains; build the spec "
            "outside jit (spec = mbjax.reaction_spec(model, joints)) and pass it as `joints=spec`"
        ) from err
    top = model.topology
    nb = top.n_bodies
    if joints is None:
        idx = [i for i in range(nb) if mass[i] > 0]
        if not idx:
            raise ValueError("reaction_spec: the model has no body with non-zero mass")
    else:
        if isinstance(joints, (str, int, np.integer)):
            joints = [joints]
        try:
            joints = list(joints)
        except TypeError:
            raise TypeError(f"joint_reactions: joints must be child body names/indices, a ReactionSpec or None, "
                            f"got {type(joints).__name__}") from None
        if not joints:
            raise ValueError(f"joint_reactions: joints is empty; name at least one joint by its child body, one "
                             f"of {top.body_names} (or pass None for every body with mass)")
        idx = []
        for j in joints:
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, (str, int, np.integer)):
                raise TypeError(f"joint_reactions: a joint is named by its child body (a name in {top.body_names} "
                                f"or an integer index), got {j!r}")
            if isinstance(j, str) and j not in top.body_names:
                raise ValueError(
                    f"joint_reactions: unknown joint {j!r}; joints are named by their child body, "
                    f"one of {top.body_names}"
                )
            idx.append(top.body_index(j))
        if len(set(idx)) != len(idx):
            raise ValueError(f"joint_reactions: duplicate joints in {list(joints)}")
    children = [0] * nb
    for p in top.parents:
        if p >= 0:
            children[p] += 1
    coords = _body_coordinates(model)
    chosen = set(idx)
    parents, chains, kinds, ncomp, moving_all, read_all = [], [], [], [], [], []
    for c in idx:
        chain = [c]
        p = top.parents[c]
        while p >= 0 and mass[p] == 0 and children[p] == 1 and p not in chosen:
            chain.append(p)
            p = top.parents[p]
        moving = [b for b in chain if coords[b]]
        read = set().union(*(coords[b] for b in chain))
        dof = min(len(moving), len(read), 6)
        if not moving:
            kind = WELD
        elif moving == [c]:
            kind = top.joint_types[c]
        else:
            kind = CHAIN
        parents.append(p)
        chains.append(tuple(chain))
        kinds.append(kind)
        ncomp.append(6 - dof)
        moving_all.append(tuple(moving))
        read_all.append(tuple(sorted(top.coordinate_index(n) for n in read)))
    return ReactionSpec(
        joints=tuple(idx),
        names=tuple(top.body_names[i] for i in idx),
        parents=tuple(parents),
        chains=tuple(chains),
        kinds=tuple(kinds),
        n_components=tuple(ncomp),
        massive=tuple(i for i in range(nb) if mass[i] > 0),
        moving=tuple(moving_all),
        read=tuple(read_all),
        fingerprint=model_fingerprint(model),
    )


def as_spec(model: Model, joints) -> ReactionSpec:
    """``joints`` as a :class:`ReactionSpec` for ``model``; a spec built for another model is refused."""
    checked_model(model, "joint_reactions")
    if not isinstance(joints, ReactionSpec):
        return reaction_spec(model, joints)
    if joints.fingerprint != model_fingerprint(model):
        raise ValueError(
            f"joint_reactions: the ReactionSpec for joints {joints.names} was built for another model "
            f"(topology or body/coordinate names differ from bodies {model.body_names}); rebuild it "
            "with mbjax.reaction_spec(model, joints)"
        )
    return joints


def spec_jit(fn):
    """Build the static :class:`ReactionSpec` eagerly, then run ``fn`` under ``eqx.filter_jit``."""
    jitted = eqx.filter_jit(fn)
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments["joints"] = as_spec(bound.arguments["model"], bound.arguments["joints"])
        return jitted(*bound.args, **bound.kwargs)

    return wrapper


# --------------------------------------------------------------------------------------------
# pose-independent prohibited directions (single revolute / prismatic joints, welds)
# --------------------------------------------------------------------------------------------


def _normal_pair(a):
    """Two unit vectors b1, b2 with (a, b1, b2) right-handed orthonormal."""
    k = jnp.argmin(jnp.abs(a))
    e = jax.nn.one_hot(k, 3, dtype=a.dtype)
    b1 = jnp.cross(a, e)
    b1 = b1 / jnp.linalg.norm(b1)
    return b1, jnp.cross(a, b1)


def fixed_directions(axis, kind: str, dtype):
    """Z ``(6, m)`` (rows [rotation; translation], child frame, joint point) of a non-chain joint.

    Revolute (axis a): translations e_x, e_y, e_z, then rotations b1, b2 ⟂ a, so λ = [F; M·b1;
    M·b2].  Prismatic: translations b1, b2 ⟂ a, then rotations e_x, e_y, e_z.  Weld: all six
    (forces first).
    """
    eye = jnp.eye(3, dtype=dtype)
    zero3 = jnp.zeros((3, 3), dtype)
    if kind == WELD:
        return jnp.concatenate([jnp.concatenate([zero3, eye], 0), jnp.concatenate([eye, zero3], 0)], 1)
    b1, b2 = _normal_pair(jnp.asarray(axis).astype(dtype))
    pair = jnp.stack([b1, b2], 1)
    z32 = jnp.zeros((3, 2), dtype)
    if kind == REVOLUTE:
        return jnp.concatenate([jnp.concatenate([zero3, eye], 0), jnp.concatenate([pair, z32], 0)], 1)
    if kind == PRISMATIC:
        return jnp.concatenate([jnp.concatenate([z32, pair], 0), jnp.concatenate([eye, zero3], 0)], 1)
    raise ValueError(f"fixed_directions: no fixed basis for a {kind!r} joint")
