"""Random body trees for tests: mixed joint types, nonlinear multi-coordinate maps, zero-inertia bodies."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import mbjax
from mbjax.maps import Affine, FunctionMap


def _nonlinear(p, x):
    """A smooth, genuinely multi-coordinate map: p0 sin(x0 + p1) + p2 x0 x1 + p3 x1² (+ cos for 3)."""
    out = p[0] * jnp.sin(x[0] + p[1]) + p[2] * x[0] * x[-1] + p[3] * x[-1] ** 2
    if x.shape[0] > 2:
        out = out + p[4] * jnp.cos(x[1] * x[2])
    return out


def random_rotation(rng):
    a, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return a * np.sign(np.linalg.det(a))


def random_inertia(rng, mass):
    # principal moments from a random box, rotated: always physical
    dims = rng.uniform(0.05, 0.4, size=3)
    moments = mass / 12.0 * np.array(
        [dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[1] ** 2]
    )
    r = random_rotation(rng)
    return r @ np.diag(moments) @ r.T


def random_tree(
    seed: int = 0,
    n_bodies: int = 8,
    n_coordinates: int = 4,
    chain_depth: int = 6,
    zero_inertia_fraction: float = 0.25,
    gravity=(0.0, -9.81, 0.0),
    nonlinear: bool = True,
):
    """A random tree: the first ``chain_depth`` bodies form a chain, the rest attach anywhere.

    Joint maps cycle through identity, affine in 2 coordinates and nonlinear in 2-3 coordinates
    (``FunctionMap``); about ``zero_inertia_fraction`` of the bodies have zero inertia.
    """
    rng = np.random.default_rng(seed)
    coords = [f"q{k}" for k in range(n_coordinates)]
    b = mbjax.ModelBuilder(coords, gravity=gravity)
    for i in range(n_bodies):
        parent = "ground" if i == 0 else (f"b{i-1}" if i < chain_depth else f"b{rng.integers(0, i)}")
        joint = "prismatic" if rng.random() < 0.3 else "revolute"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        kind = i % 3 if nonlinear else min(i % 3, 1)
        if kind == 0:
            jmap = coords[i % n_coordinates]
        elif kind == 1:
            cs = list(rng.choice(coords, size=min(2, n_coordinates), replace=False))
            jmap = Affine(cs, rng.normal(size=len(cs)), rng.normal() * 0.1)
        else:
            cs = list(rng.choice(coords, size=min(3, n_coordinates), replace=False))
            jmap = FunctionMap(_nonlinear, cs, jnp.asarray(rng.normal(size=5) * 0.5))
        zero = rng.random() < zero_inertia_fraction
        mass = 0.0 if zero else float(rng.uniform(0.5, 3.0))
        b.add_body(
            f"b{i}",
            parent=parent,
            joint=joint,
            axis=axis,
            map=jmap,
            rotation=random_rotation(rng),
            translation=rng.normal(size=3) * 0.3,
            mass=mass,
            com=rng.normal(size=3) * 0.1,
            inertia=None if zero else random_inertia(rng, mass),
        )
    return b.build()


def random_poses(seed: int, n: int, n_coordinates: int, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.uniform(-scale, scale, size=(n, n_coordinates)))


def _vec(v):
    return " ".join(f"{x:.17g}" for x in v)


def urdf_tree(n: int, seed: int, chain: bool) -> str:
    """A URDF tree of ``n`` revolute links (a chain, or random parents among the last 3 links)."""
    rng = np.random.default_rng(seed)
    parts = [f'<robot name="tree{n}"><link name="base"/>']
    for k in range(n):
        parts.append(
            f'<link name="l{k}"><inertial><origin xyz="{_vec(rng.normal(size=3) * 0.05)}" '
            f'rpy="{_vec(rng.normal(size=3))}"/><mass value="{rng.uniform(0.5, 2):.17g}"/>'
            '<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        )
    for k in range(n):
        parent = "base" if k == 0 else (f"l{k - 1}" if chain else f"l{int(rng.integers(max(0, k - 3), k))}")
        axis = rng.normal(size=3)
        parts.append(
            f'<joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{_vec(rng.normal(size=3) * 0.2)}" rpy="{_vec(rng.normal(size=3))}"/>'
            f'<axis xyz="{_vec(axis / np.linalg.norm(axis))}"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        )
    parts.append("</robot>")
    return "".join(parts)


def two_link_arm():
    """The README's two-link planar arm (shoulder, elbow; revolute about z, gravity along -y)."""
    import mbjax

    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", axis=[0, 0, 1], map="shoulder", mass=2.0, com=[0, -0.15, 0],
               inertia=np.diag([.012, .002, .012]))
    b.add_body("forearm", parent="upper_arm", axis=[0, 0, 1], translation=[0, -0.3, 0], map="elbow", mass=1.2,
               com=[0, -0.12, 0], inertia=np.diag([.006, .001, .006]))
    return b.build()
