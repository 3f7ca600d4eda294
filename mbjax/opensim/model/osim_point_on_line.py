"""OpenSim's ``PointOnLineConstraint``, eliminated: dependent coordinates become implicit joint maps.

OpenSim (``PointOnLineConstraint::extendAddToSystem``) builds Simbody's ``Constraint::PointOnLine``
on the *mobilized bodies* of its two sockets (``socket_line_body``, ``socket_follower_body``; 3.x:
``line_body``, ``follower_body``), with ``line_direction_vec`` normalised and ``point_on_line``,
``point_on_follower`` taken as given in those bodies' frames (an offset frame named by a socket
contributes its body, not its offset).  Simbody's position errors are the follower point relative to
the point on the line, projected on two unit vectors perpendicular to the line direction ``d``:
``x = unit(d × e_k)`` (``e_k`` the axis of ``d``'s smallest component, ``UnitVec3::perp``) and
``y = d × x``, both carried by the line body.  Each constraint is two equations.

mbjax does not integrate a DAE: as for any closed chain (Ehsani §3-3), ``m`` of the model's
coordinates become dependent, ``f(q_ind)`` solving ``g(f, q_ind) = 0`` with
:class:`~mbjax.constraints.LoopConstraint` (Newton with continuation from the assembled default,
conditioning checked at run time: a near-singular ``∂g/∂f`` raises via ``eqx.error_if``) and
exposed to the model as :class:`~mbjax.constraints.ImplicitMap` joint maps (``method="implicit"``:
∇f and H by autodiff through the implicit function theorem).  ``g`` is evaluated from the body
poses of the *premodel* (the file loaded with all its coordinates independent).

Which coordinates become dependent: column-pivoted QR (Businger-Golub, ties within a relative 1e-9
broken by file order) of ``∂g/∂q`` at the file's default pose, or the caller's
``independent_coordinates``.  The default pose is then assembled as OpenSim's ``initSystem``
assembles it: the independent coordinates keep their default values, the dependent ones are
solved for (OpenSim's assembler may move the independent ones too; compare where they agree).
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from ..._model import GROUND
from .osim_xml import _floats, _text

#: relative tie tolerance of the pivot choice (near-equal columns are taken in file order)
PIVOT_TIE = 1e-9


class PointOnLine:
    """One enforced ``PointOnLineConstraint`` as read from the file (bodies are mbjax body names)."""

    def __init__(self, name, line_body, direction, point_on_line, follower_body, point_on_follower, where):
        self.name = name
        self.line_body = line_body
        self.direction = direction
        self.point_on_line = point_on_line
        self.follower_body = follower_body
        self.point_on_follower = point_on_follower
        self.where = where


def read_point_on_line(loader, con) -> PointOnLine:
    """A ``<PointOnLineConstraint>`` element as a :class:`PointOnLine` (errors name file and line)."""
    doc = loader.doc
    line_ref = _text(con, "socket_line_body") or _text(con, "line_body")
    follower_ref = _text(con, "socket_follower_body") or _text(con, "follower_body")
    if line_ref is None or follower_ref is None:
        raise doc.error(con, "PointOnLineConstraint needs <socket_line_body> and <socket_follower_body> "
                        "(3.x: <line_body>, <follower_body>)")
    line_body, _ = loader._resolve(con, line_ref)  # OpenSim uses the frame's mobilized body
    follower_body, _ = loader._resolve(con, follower_ref)
    direction = _floats(doc, con, "line_direction_vec", 3, default=[0, 0, 0])
    norm = float(np.linalg.norm(direction))
    if not np.isfinite(norm) or norm == 0.0:
        raise doc.error(con, f"<line_direction_vec> {list(direction)} has no direction (OpenSim normalises it)")
    if line_body == follower_body:
        raise doc.error(con, f"line and follower are the same body {line_body!r}")
    return PointOnLine(
        con.get("name"), line_body, direction / norm,
        _floats(doc, con, "point_on_line", 3, default=[0, 0, 0]), follower_body,
        _floats(doc, con, "point_on_follower", 3, default=[0, 0, 0]), doc.where(con))


def perpendiculars(direction):
    """Simbody's two unit vectors perpendicular to the unit ``direction``: ``x = d.perp()``, ``y = d × x``."""
    d = np.asarray(direction, float)
    k = int(np.argmin(np.abs(d)))
    x = np.cross(d, np.eye(3)[k])
    x = x / np.linalg.norm(x)
    return x, np.cross(d, x)


def _pose(poses, index, dtype):
    return jnp.eye(4, dtype=dtype) if index < 0 else poses[index]


class _Residual:
    """``g(f, q_ind)``: the constraints' position errors from the premodel's body poses.

    ``params`` = ``dict(model=premodel, axes=(k, 2, 3), line_point=(k, 3), follower_point=(k, 3))``;
    the body indices and the coordinate placement are static (a hashable callable).
    """

    def __init__(self, n, dependent_index, independent_index, line_index, follower_index):
        self.n = n
        self.dep = tuple(int(i) for i in dependent_index)
        self.ind = tuple(int(i) for i in independent_index)
        self.line = tuple(int(i) for i in line_index)
        self.follower = tuple(int(i) for i in follower_index)

    def full(self, f, q):
        dtype = jnp.result_type(f, q)
        out = jnp.zeros(self.n, dtype)
        return out.at[np.asarray(self.dep, int)].set(f).at[np.asarray(self.ind, int)].set(q)

    def __call__(self, params, f, q):
        return errors(params, self.full(f, q), self.line, self.follower)


def errors(params, q_full, line, follower):
    """Position errors ``(2k,)`` of the constraints at the premodel's coordinates ``q_full``."""
    from ..._kinematics import body_poses

    poses = body_poses(params["model"], q_full)
    out = []
    for k, (il, jf) in enumerate(zip(line, follower)):
        xl, xf = _pose(poses, il, q_full.dtype), _pose(poses, jf, q_full.dtype)
        p_follower = xf[:3, :3] @ params["follower_point"][k] + xf[:3, 3]
        p_line = xl[:3, :3] @ params["line_point"][k] + xl[:3, 3]
        axes = params["axes"][k] @ xl[:3, :3].T  # rows: the perpendiculars in ground
        out.append(axes @ (p_follower - p_line))
    return jnp.concatenate(out)


def pivoted_dependents(jac, m):
    """Indices of ``m`` columns of ``jac`` by column-pivoted QR (largest remaining norm first; ties
    within :data:`PIVOT_TIE` relative go to the earliest column) and the last pivot's relative size."""
    a = np.array(jac, dtype=float)
    scale = max(float(np.max(np.linalg.norm(a, axis=0))), np.finfo(float).tiny)
    chosen = []
    last = 0.0
    for _ in range(m):
        norms = np.linalg.norm(a, axis=0)
        norms[chosen] = -1.0
        top = norms.max()
        j = int(np.flatnonzero(norms >= top * (1 - PIVOT_TIE))[0])
        chosen.append(j)
        last = float(norms[j]) / scale
        if norms[j] <= 0:
            break
        v = a[:, j] / norms[j]
        a = a - np.outer(v, v @ a)
    return chosen, last


def _indices(premodel, cons):
    body_names = premodel.body_names
    index = lambda b: -1 if b == GROUND else body_names.index(b)  # noqa: E731
    return tuple(index(c.line_body) for c in cons), tuple(index(c.follower_body) for c in cons)


def _params(premodel, cons):
    return dict(
        model=premodel,
        axes=jnp.asarray(np.stack([np.stack(perpendiculars(c.direction)) for c in cons])),
        line_point=jnp.asarray(np.stack([c.point_on_line for c in cons])),
        follower_point=jnp.asarray(np.stack([c.point_on_follower for c in cons])),
    )


def _choose_and_assemble(doc, first, premodel, cons, independent_coordinates):
    """``(dependent, independent, why, q_ref, f_ref)``: the dependent coordinates' indices (sorted),
    the independent ones', how they were chosen, and the assembled default pose."""
    import jax

    from ...constraints import LoopConstraint

    names = premodel.coordinate_names
    n, m = len(names), 2 * len(cons)
    line_index, follower_index = _indices(premodel, cons)
    params = _params(premodel, cons)
    default = np.asarray(premodel.osim.default, dtype=float)
    jac = np.asarray(jax.jacfwd(lambda qf: errors(params, qf, line_index, follower_index))(jnp.asarray(default)))
    if independent_coordinates is None:
        dep, last = pivoted_dependents(jac, m)
        if last < 1e-8:
            raise doc.error(first.point_on_line[0], f"the PointOnLineConstraints' {m} equations are not "
                            f"independent at the default pose (∂g/∂q has rank < {m}); pass "
                            "independent_coordinates= to choose", ValueError)
        why = "column-pivoted QR of ∂g/∂q at the file's default pose"
    else:
        chosen = ((independent_coordinates,) if isinstance(independent_coordinates, str)
                  else tuple(independent_coordinates))
        for c in chosen:
            if c not in names:
                raise ValueError(f"{doc.path}: independent_coordinates: {c!r} is not an independent coordinate "
                                 f"of the model (free coordinates: {names})")
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"{doc.path}: independent_coordinates {chosen} names a coordinate twice")
        if len(chosen) != n - m:
            raise ValueError(f"{doc.path}: independent_coordinates must name {n - m} of the {n} free coordinates "
                             f"{names} ({len(cons)} PointOnLineConstraint(s) remove {m}), got {len(chosen)}")
        dep = [i for i, c in enumerate(names) if c not in chosen]
        why = "the caller's independent_coordinates"
    dep = sorted(dep)
    ind = [i for i in range(n) if i not in dep]
    dep_names = tuple(names[i] for i in dep)
    ind_names = tuple(names[i] for i in ind)
    s = np.linalg.svd(jac[:, dep], compute_uv=False)
    if s[-1] < 1e-8 * max(float(np.linalg.svd(jac, compute_uv=False)[0]), 1e-300):
        raise ValueError(f"{doc.path}: the PointOnLineConstraints cannot be solved for {dep_names} at the default "
                         f"pose (∂g/∂f is singular there); choose other independent_coordinates")
    fn = _Residual(n, dep, ind, line_index, follower_index)
    try:
        loop = LoopConstraint(fn, params, ind_names, dep_names, default[ind], default[dep])
    except ValueError as e:
        raise ValueError(f"{doc.path}: the default pose cannot be assembled with {ind_names} at their defaults "
                         f"(solving the PointOnLineConstraints for {dep_names}): {e}") from None
    return dep, ind, why, default[ind], np.asarray(loop.f_ref, dtype=float)


def eliminate(path, first, premodel, loader_kwargs, independent_coordinates=None):
    """Reload ``path`` with the dependent coordinates of its PointOnLineConstraints as implicit maps.

    ``first`` is the loader of the first pass (its ``point_on_line`` elements read), ``premodel`` the
    model it built (every coordinate independent).  The choice and the assembly are made in float64
    whatever ``jax_enable_x64`` says (from a float64 load of the file when it is off); the model's
    solve then runs in the session's precision.
    """
    import jax

    from ...constraints import ImplicitMap, LoopConstraint

    loader_class = type(first)  # mbjax.opensim.model.osim._Loader (which imports this module)
    doc = first.doc
    cons = [read_point_on_line(first, el) for el in first.point_on_line]
    names = premodel.coordinate_names
    n, m = len(names), 2 * len(cons)
    if m > n:
        raise doc.error(first.point_on_line[0], f"{len(cons)} PointOnLineConstraint(s) remove {m} degrees of "
                        f"freedom but the model has only {n} independent coordinates {names}")
    with jax.enable_x64(True):
        pre64 = premodel
        if premodel.osim.default.dtype != np.float64:  # the file's doubles, not float32 roundings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pre64 = loader_class(path, **loader_kwargs).build()
        dep, ind, why, q_ref, f_ref = _choose_and_assemble(doc, first, pre64, cons, independent_coordinates)
        default = np.asarray(pre64.osim.default, dtype=float)
    line_index, follower_index = _indices(premodel, cons)
    fn = _Residual(n, dep, ind, line_index, follower_index)
    dep_names = tuple(names[i] for i in dep)
    ind_names = tuple(names[i] for i in ind)
    loop = LoopConstraint(fn, _params(premodel, cons), ind_names, dep_names, q_ref, f_ref, polish=False)
    assembled = dict(zip(dep_names, f_ref.tolist()))
    couplings = dict(loader_kwargs.get("couplings") or {})
    for d in dep_names:
        couplings[d] = ImplicitMap(loop, d, method="implicit")
    loader = loader_class(path, **dict(loader_kwargs, couplings=couplings))
    loader.eliminated = tuple(
        (d, f"PointOnLineConstraint {', '.join(repr(c.name) for c in cons)} ({why}); assembled default "
            f"{assembled[d]!r} (file: {float(default[names.index(d)])!r})") for d in dep_names)
    loader.assembled = tuple(assembled.items())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first pass warned already
        return loader.build()


def point_on_line_loop(model):
    """The :class:`~mbjax.constraints.LoopConstraint` of a model's eliminated PointOnLineConstraints
    (``None`` if it has none): ``coordinates`` are the model's independent coordinates it reads,
    ``joints`` the dependent ones, ``params["model"]`` the premodel."""
    import jax

    from ...constraints import LoopConstraint

    info = model.osim
    if info is None or not info.eliminated:
        return None
    dependent = tuple(c for c, _ in info.eliminated)
    for leaf in jax.tree.leaves(model, is_leaf=lambda x: isinstance(x, LoopConstraint)):
        if isinstance(leaf, LoopConstraint) and isinstance(leaf.fn, _Residual) and leaf.joints == dependent:
            return leaf
    return None


def dependent_values(model, q):
    """``{coordinate: value}`` of the coordinates a model's PointOnLineConstraints made dependent, at
    the model's coordinates ``q`` (the differentiable implicit solve; empty if there are none)."""
    from ...constraints import implicit_solve

    loop = point_on_line_loop(model)
    if loop is None:
        return {}
    q = jnp.asarray(q)
    local = jnp.stack([q[model.coordinate_names.index(c)] for c in loop.coordinates])
    f = implicit_solve(loop, local)
    return {c: f[k] for k, c in enumerate(loop.joints)}
