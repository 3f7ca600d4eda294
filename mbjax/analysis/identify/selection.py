"""The fitted parameters: ``where`` + parametrizations ↔ one free vector θ, with names.

``where(tree)`` follows ``eqx.tree_at``: it returns one node of ``tree`` or a tuple of nodes
("items"); an item is a leaf, or a tuple of leaves for a group parametrization
(``(m.mass, m.com, m.inertia)`` for :class:`~mbjax.analysis.identify.PhysicalInertia`).  ``parametrization``
is ``None`` (:class:`~mbjax.analysis.identify.Identity` for every item), one parametrization (for every
item; a group parametrization given alone takes the whole of ``where``'s tuple), or a tuple with
one per item.  ``tree`` is a ``Model`` or any pytree holding one (``(model, damper)``).

Names come from the leaf paths, with body names for the per-body leaves of a Model
(``mass[forearm]``, ``com[forearm,y]``, ``inertia[forearm,x,y]``) and muscle names for per-muscle
leaves under ``model.muscles``; leaves of other modules are named by class (``ViscousDamping.c[1]``), other leaves by path
(``[2][0][1]``).
"""

from __future__ import annotations

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._model import Model
from .parametrizations import Identity, LeafInfo, Parametrization

_BODY_FIELDS = {"mass": 1, "com": 2, "inertia": 3, "axis": 2, "offset": 3}


def _copied_geometry(tree) -> set[int]:
    """``id`` of the joint-geometry leaves (offsets, axes, joint maps) of every model in ``tree``
    whose point-on-line constraints solve on a copy of that geometry (``OsimInfo.eliminated``)."""
    out: set[int] = set()
    nodes = jax.tree_util.tree_flatten(tree, is_leaf=lambda x: isinstance(x, Model))[0]
    for node in nodes:
        if isinstance(node, Model) and getattr(node.osim, "eliminated", ()):
            out.update(id(leaf) for leaf in jax.tree.leaves((node.offset, node.axis, node.maps)))
    return out


def _leaf_infos(tree) -> dict[int, LeafInfo]:
    """``id(leaf) -> LeafInfo`` for every array leaf of ``tree``."""
    out: dict[int, LeafInfo] = {}
    models = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: isinstance(x, eqx.Module))[0]
    n_models = sum(isinstance(node, Model) for _, node in models)
    for mpath, node in models:
        if isinstance(node, Model):
            # one Model: names relative to it (``mass[forearm]``); several: prefixed by its path
            prefix = "" if n_models == 1 else jax.tree_util.keystr(mpath)
            nm = len(node.muscle_names)
            for path, leaf in jax.tree_util.tree_flatten_with_path(node)[0]:
                if not eqx.is_array(leaf):
                    continue
                name = (prefix + jax.tree_util.keystr(path)).lstrip(".")
                shape = tuple(np.shape(leaf))
                labels: tuple = ()
                key = getattr(path[0], "name", None) if len(path) == 1 else None
                if key in _BODY_FIELDS:
                    labels = (node.body_names,) + tuple("xyz" if key != "offset" else None for _ in shape[1:])
                elif "muscles" in name and nm and shape and shape[0] == nm:
                    labels = (node.muscle_names,)
                out[id(leaf)] = LeafInfo(name, shape, labels)
        elif isinstance(node, eqx.Module):  # a force element etc.: ``ViscousDamping.c[1]``
            for path, leaf in jax.tree_util.tree_flatten_with_path(node)[0]:
                if eqx.is_array(leaf):
                    out[id(leaf)] = LeafInfo(type(node).__name__ + jax.tree_util.keystr(path), tuple(np.shape(leaf)))
        elif eqx.is_array(node):
            out[id(node)] = LeafInfo(jax.tree_util.keystr(tuple(mpath)), tuple(np.shape(node)))
    return out


def _items(where, tree):
    if not callable(where):
        raise TypeError(f"`where` must be a function tree -> leaves to fit (e.g. `lambda m: m.mass`), got "
                        f"{type(where).__name__} {where!r}")
    try:
        got = where(tree)
    except (AttributeError, KeyError, IndexError, TypeError) as err:
        raise ValueError(f"`where` failed on the tree ({type(tree).__name__}): {type(err).__name__}: {err}; it must "
                         "pick leaves of the tree it is given (the Model, or the tuple holding it)") from err
    items = tuple(got) if isinstance(got, tuple) else (got,)
    if not items:
        raise ValueError("`where` selected nothing (it returned an empty tuple): return the leaves to fit, "
                         "e.g. `lambda m: m.mass` or `lambda m: (m.mass, m.com)`")
    return items


class Selection(eqx.Module):
    """Binds ``where`` and parametrizations to a tree: :meth:`theta`, :meth:`apply`, :attr:`names`.

    All fields are static and compare by value (``where`` by identity), so jitted steps built on
    equal selections share one compilation (a second :func:`~mbjax.analysis.identify.fit` with new data or
    a new start does not recompile).
    """

    where: Callable = eqx.field(static=True)
    params: tuple = eqx.field(static=True)
    sizes: tuple = eqx.field(static=True)
    names: tuple = eqx.field(static=True)
    grouped_all: bool = eqx.field(static=True)
    shapes: tuple = eqx.field(static=True)

    def __init__(self, tree, where, parametrization=None):
        items = _items(where, tree)
        grouped_all = isinstance(parametrization, Parametrization) and parametrization.group
        if grouped_all:
            items = (items,)
        if parametrization is None:
            params = (Identity(),) * len(items)
        elif isinstance(parametrization, Parametrization):
            params = (parametrization,) * len(items)
        else:
            params = tuple(parametrization) if isinstance(parametrization, (tuple, list)) else (parametrization,)
            wrong = [p for p in params if not isinstance(p, Parametrization)]
            if wrong:
                raise TypeError(f"parametrization must be None, a Parametrization (Identity(), Positive(), "
                                f"Symmetric(), PhysicalInertia(), ...) or a tuple of them, one per item of `where`; "
                                f"got {wrong[0]!r}")
            if len(params) != len(items):
                raise ValueError(f"{len(params)} parametrizations for {len(items)} items returned by `where`")
        infos = _leaf_infos(tree)
        geometry = _copied_geometry(tree)
        bound, sizes, names, shapes, seen = [], [], [], [], {}
        for item, p in zip(items, params):
            leaves = tuple(jax.tree.leaves(item))
            if not leaves:
                raise ValueError("`where` selected an item with no array leaves")
            if any(id(leaf) not in infos for leaf in leaves):
                raise ValueError("`where` must return leaves of the tree (eqx.tree_at convention)")
            info = tuple(infos[id(leaf)] for leaf in leaves)
            for leaf, i in zip(leaves, info):
                if not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
                    raise TypeError(f"`where` selected the leaf {i.name!r} of dtype {jnp.result_type(leaf)}: only "
                                    "floating-point leaves can be fitted (an integer or boolean leaf has no "
                                    "derivative; give it as a float array, e.g. jnp.asarray(x, float))")
                if id(leaf) in seen:
                    raise ValueError(f"`where` selects the leaf {i.name!r} twice: select each leaf once")
                seen[id(leaf)] = i.name
            shapes.append(tuple(i.shape for i in info))
            copied = [i.name for leaf, i in zip(leaves, info) if id(leaf) in geometry]
            if copied:
                raise NotImplementedError(
                    f"fitting {copied}: the model's PointOnLineConstraint(s) eliminated coordinates and "
                    "solve on a copy of its joint geometry (offsets, axes, joint maps), which this fit "
                    "would not move (mbjax.opensim.model.osim_point_on_line); masses, inertias, forces and muscle "
                    "parameters can be fitted")
            if p.group:
                value, info_arg = leaves, info
            else:
                if len(leaves) != 1:
                    raise ValueError(f"{type(p).__name__} parametrizes one leaf; the item has {len(leaves)}")
                value, info_arg = leaves[0], info[0]
            p = p.bind(value, info_arg)
            theta = p.free(value)
            bound.append(p)
            sizes.append(int(theta.shape[0]))
            names += list(p.names(info_arg))
        self.where = where
        self.params = tuple(bound)
        self.sizes = tuple(sizes)
        self.names = tuple(names)
        self.grouped_all = bool(grouped_all)
        self.shapes = tuple(shapes)

    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    def _item_values(self, tree):
        items = _items(self.where, tree)
        if self.grouped_all:
            items = (items,)
        out = []
        for item, p, shapes in zip(items, self.params, self.shapes):
            leaves = tuple(jax.tree.leaves(item))
            got = tuple(tuple(np.shape(leaf)) for leaf in leaves)
            if len(items) != len(self.params) or got != shapes:
                raise ValueError(f"Selection: `where` picks leaves of shapes {got} from this tree, but the selection "
                                 f"was built on a tree with {shapes}: use it with trees of the same structure "
                                 "(the same model), or build a new Selection")
            out.append(leaves if p.group else leaves[0])
        return out

    def theta(self, tree) -> jnp.ndarray:
        """The free vector θ of ``tree``'s current values."""
        parts = [p.free(v) for p, v in zip(self.params, self._item_values(tree))]
        return jnp.concatenate([jnp.ravel(x) for x in parts])

    def apply(self, theta, tree):
        """``tree`` with the selected leaves set from ``theta`` ``(n,)``."""
        try:
            theta = jnp.asarray(theta)
        except TypeError:
            raise TypeError(f"Selection.apply: theta must be a real vector of shape ({self.n},), got "
                            f"{type(theta).__name__}") from None
        if not (jnp.issubdtype(theta.dtype, jnp.floating) or jnp.issubdtype(theta.dtype, jnp.integer)):
            raise TypeError(f"Selection.apply: theta must be real, got dtype {theta.dtype}")
        if theta.shape != (self.n,):
            raise ValueError(f"Selection.apply: theta must have shape (n,) = ({self.n},), one entry per name "
                             f"in .names, got {tuple(theta.shape)}")
        splits = [int(x) for x in np.cumsum(self.sizes)[:-1]]
        parts = jnp.split(theta, splits) if splits else [theta]
        new = []
        for p, v, t in zip(self.params, self._item_values(tree), parts):
            out = p.value(t, v)
            new += list(out) if p.group else [out]
        flat_where = lambda t: tuple(jax.tree.leaves(self.where(t)))  # noqa: E731
        return eqx.tree_at(flat_where, tree, tuple(new))
