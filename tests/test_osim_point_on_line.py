"""OpenSim's PointOnLineConstraint, eliminated (mbjax.opensim.model.osim_point_on_line), on OpenSim's
BouncingBlock model (tests/data/opensim_models/bouncing_block, Apache-2.0, see its NOTICE).

Every check is against something computed another way: the constraints against the reduced
model's body origins (not the residual code), ∇f and H against central differences of the Newton
solve and against the projection method (Ehsani Eq. 102-120), the reduced mass matrix against
Dᵀ M_full D of the model loaded with the constraints left out.
"""

from __future__ import annotations

import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.constraints import LoopConstraint, loop_values
from mbjax.io import load_osim
from mbjax.opensim.model.osim_point_on_line import dependent_values, point_on_line_loop

PATH = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "bouncing_block", "bouncing_block.osim")
FREE = ("xRotation", "yRotation", "zRotation", "xTranslation", "yTranslation", "zTranslation", "pin1_rot", "pin2_rot")


#: a variant with a tilted line, a point on the line off its body's origin and follower points off
#: the bodies' origins: as written, every dependent coordinate of BouncingBlock is affine in the
#: independent ones (H = 0), here they are not.  (constraint, line direction, point on line,
#: point on follower)
VARIANT = (("lock_block_to_y_axis", (0.2, 1.0, 0.1), (0.05, 0.0, -0.03), (0.0, 0.1, 0.0)),
           ("lock_foot_to_y_axis", (0.0, 1.0, 0.0), (0.0, 0.0, 0.0), (0.1, 0.05, 0.02)))


def variant_text(text):
    """bouncing_block.osim's text with the constraints of :data:`VARIANT`."""
    for name, d, p, f in VARIANT:
        a = text.index(f'<PointOnLineConstraint name="{name}">')
        b = text.index("</PointOnLineConstraint>", a)
        block = text[a:b]
        for tag, v in (("line_direction_vec", d), ("point_on_line", p), ("point_on_follower", f)):
            i, j = block.index(f"<{tag}>"), block.index(f"</{tag}>")
            block = block[:i] + f"<{tag}>{' '.join(repr(x) for x in v)}" + block[j:]
        text = text[:a] + block + text[b:]
    return text


@pytest.fixture(scope="module")
def variant_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("pol") / "bouncing_block_variant.osim"
    with open(PATH) as fh:
        path.write_text(variant_text(fh.read()))
    return str(path)


@pytest.fixture(scope="module")
def model():
    return load_osim(PATH)


@pytest.fixture(scope="module")
def premodel():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the explicit opt-out is warned
        return load_osim(PATH, ignore_constraints=("PointOnLineConstraint",))


@pytest.fixture(scope="module")
def variant(variant_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = load_osim(variant_path, ignore_constraints=("PointOnLineConstraint",))
    return load_osim(variant_path), pre


def _distances(model, q, constraints):
    """Distance of each follower point from its line, from the model's body poses (world geometry,
    not the residual code).  ``constraints``: (line body, direction, point on line, follower body,
    point on follower)."""
    poses = np.asarray(mbjax.body_poses(model, jnp.asarray(q)))
    pose = lambda b: np.eye(4) if b == "ground" else poses[model.body_index(b)]  # noqa: E731
    out = []
    for line, d, p_line, follower, p_follower in constraints:
        xl, xf = pose(line), pose(follower)
        d = xl[:3, :3] @ (np.asarray(d) / np.linalg.norm(d))
        off = (xf[:3, :3] @ p_follower + xf[:3, 3]) - (xl[:3, :3] @ p_line + xl[:3, 3])
        out.append(np.linalg.norm(np.cross(off, d)))
    return np.array(out)


AS_WRITTEN = (("ground", (0, 1, 0), (0, 0, 0), "block", (0, 0, 0)), ("ground", (0, 1, 0), (0, 0, 0), "link2", (0, 0, 0)))
VARIANT_GEOMETRY = tuple(("ground", d, p, body, f) for (_, d, p, f), body in zip(VARIANT, ("block", "link2")))


def _loop(model) -> LoopConstraint:
    loop = point_on_line_loop(model)
    loops = [x for x in jax.tree.leaves(model, is_leaf=lambda x: isinstance(x, LoopConstraint))
             if isinstance(x, LoopConstraint)]
    assert loops and all(x is loop for x in loops)  # one constraint, solved once
    return loop


def _poses(model, n, seed=0):
    """Random independent poses inside the ranges (yRotation kept off the FreeJoint's gimbal lock at
    ±π/2, which its ±2 range includes).  The variant's tilted line leaves the block's origin
    0.2·yTranslation off ground's y axis, which the 1 m leg reaches only near the default height:
    its poses stay in a box about the default."""
    info = model.osim
    lo, hi = np.array(info.lower), np.array(info.upper)
    box = {"yRotation": (-1.2, 1.2)}
    if "variant" in info.source:
        box = {"yRotation": (-0.6, 0.6), "yTranslation": (0.7, 1.5), "pin1_rot": (-0.8, 0.8), "pin2_rot": (-1.8, -0.6)}
    for name, (a, b) in box.items():
        k = model.coordinate_names.index(name)
        lo[k], hi[k] = a, b
    rng = np.random.default_rng(seed)
    return lo + (hi - lo) * rng.uniform(0.1, 0.9, size=(n, lo.size))


def _full(model, premodel, q):
    """The premodel's coordinates for the reduced model's q (dependent ones from the solve)."""
    out = jnp.zeros(premodel.n_coordinates, dtype=q.dtype)
    names = premodel.coordinate_names
    for name, v in dependent_values(model, q).items():
        out = out.at[names.index(name)].set(v)
    for name, v in zip(model.coordinate_names, q):
        out = out.at[names.index(name)].set(v)
    return out


def test_roles_and_assembly(model):
    info = model.osim
    dependent = [c for c, r in info.roles if r == "dependent"]
    assert len(dependent) == 4 and model.n_coordinates == 4
    assert sorted(dependent + list(model.coordinate_names)) == sorted(FREE)
    assert [c for c, _ in info.eliminated] == dependent
    assert all("PointOnLineConstraint 'lock_block_to_y_axis', 'lock_foot_to_y_axis'" in why
               for _, why in info.eliminated)
    assert info.ignored == ()
    # the file's default xTranslation (0.000278) violates the block's constraint: assembled to 0
    assembled = dict(info.assembled)
    assert set(assembled) == set(dependent)
    assert assembled["xTranslation"] == pytest.approx(0.0, abs=1e-14)
    poses = np.asarray(mbjax.body_poses(model, info.default))
    for body in ("block", "link2"):
        p = poses[model.body_index(body), :3, 3]
        assert abs(p[0]) < 1e-12 and abs(p[2]) < 1e-12


@pytest.mark.extended
def test_constraints_hold_at_random_poses(model, variant):
    """Each follower point stays on its line, read from the reduced model's own body poses."""
    for m, geometry in ((model, AS_WRITTEN), (variant[0], VARIANT_GEOMETRY)):
        worst = max(float(np.max(_distances(m, q, geometry))) for q in _poses(m, 6))
        assert worst < 1e-12


@eqx.filter_jit
def _both_routes(loop, q):
    """(f, ∇f, H) by the implicit route (autodiff through the Newton solve) and by the projection
    route (Ehsani's closed form, no autodiff): one compiled program for both."""
    return loop_values(loop, q, "implicit"), loop_values(loop, q, "projection")


@pytest.mark.extended  # 30 s; the solved poses are checked against OpenSim's constraints in CI (validation)
def test_derivatives_match_finite_differences_and_projection(variant):
    """On the variant (as written, H = 0 identically)."""
    model = variant[0]
    loop = _loop(model)
    q = jnp.asarray(_poses(model, 1, seed=1)[0])
    (f, g, h), (_, g_p, h_p) = _both_routes(loop, q)
    # central differences of the projection route's f and ∇f (the same program, already compiled),
    # against the implicit route's ∇f and H
    step = 1e-5
    eye = np.eye(q.size)
    plus = [_both_routes(loop, q + step * e)[1] for e in eye]
    minus = [_both_routes(loop, q - step * e)[1] for e in eye]
    g_fd = np.stack([(p[0] - m[0]) / (2 * step) for p, m in zip(plus, minus)], axis=1)
    h_fd = np.stack([(p[1] - m[1]) / (2 * step) for p, m in zip(plus, minus)], axis=2)
    scale = 1 + np.max(np.abs(g))
    assert np.max(np.abs(g - g_fd)) < 1e-8 * scale
    assert np.max(np.abs(h - h_fd)) < 1e-7 * (1 + np.max(np.abs(h)))
    assert np.max(np.abs(g - g_p)) < 1e-12 * scale
    assert np.max(np.abs(h - h_p)) < 1e-10 * (1 + np.max(np.abs(h)))
    assert np.max(np.abs(loop.residual(f, q))) < 1e-12
    assert np.max(np.abs(h)) > 0.05  # a real second-order test


@pytest.mark.extended  # 35-40 s of compilation; D = ∂q_full/∂q_ind is checked in CI (derivatives test)
def test_mass_matrix_is_projected_full_one(variant):
    """M_reduced = Dᵀ M_full D, D = ∂q_full/∂q_ind (the premodel is the file loaded without the
    constraints, an independent route to the mass matrix).  On the variant only (tilted line,
    off-origin points: D varies with the pose; the file as written passed too, 4e-34 relative,
    and costs a second compile)."""
    model, premodel = variant

    @jax.jit  # both models' quantities in one program (compiled once, run at each pose)
    def both_models(q):
        full = lambda x: _full(model, premodel, x)  # noqa: E731
        qf, d = full(q), jax.jacfwd(full)(q)
        expected = d.T @ mbjax.mass_matrix(premodel, qf) @ d
        return (expected, mbjax.mass_matrix(model, q)), (mbjax.body_poses(model, q), mbjax.body_poses(premodel, qf))

    for q in _poses(model, 2, seed=2):
        (expected, got), (poses, full_poses) = both_models(jnp.asarray(q))
        assert np.max(np.abs(got - expected)) < 1e-10 * np.max(np.abs(expected))
        # the same pose from both models
        np.testing.assert_allclose(poses, full_poses, atol=1e-12)


def test_independent_coordinates_keyword():
    chosen = ("xRotation", "yTranslation", "pin1_rot", "pin2_rot")
    with pytest.raises(ValueError, match="not an independent coordinate"):
        load_osim(PATH, independent_coordinates=("nope", "yTranslation", "pin1_rot", "pin2_rot"))
    with pytest.raises(ValueError, match="must name 4 of the 8"):
        load_osim(PATH, independent_coordinates=chosen[:3])
    with pytest.raises(ValueError, match="twice"):
        load_osim(PATH, independent_coordinates=("pin1_rot",) * 4)
    # the foot's out-of-plane offset moves only with xRotation and yRotation (and zTranslation,
    # also the block's): keeping xRotation and yRotation independent leaves it unsolvable
    with pytest.raises(ValueError, match="cannot be solved for"):
        load_osim(PATH, independent_coordinates=("xRotation", "yRotation", "pin1_rot", "pin2_rot"))


def test_refusals_name_the_element(tmp_path):
    text = open(PATH).read().replace("<line_direction_vec>0 1 0</line_direction_vec>",
                                     "<line_direction_vec>0 0 0</line_direction_vec>", 1)
    path = tmp_path / "zero.osim"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"zero.osim:\d+: <PointOnLineConstraint name='lock_block_to_y_axis'>: "
                                         r"<line_direction_vec>.*no direction"):
        load_osim(str(path))
    # the opt-out still works, warned and listed
    with pytest.warns(UserWarning, match="not modelled"):
        m = load_osim(PATH, ignore_constraints=("PointOnLineConstraint",))
    assert m.n_coordinates == 8 and m.osim.eliminated == ()


@pytest.mark.extended
def test_float32_session_chooses_and_assembles_in_float64(model):
    """With jax_enable_x64 off the choice and the assembly are still made in float64 (a float32
    Newton cannot meet the assembly tolerance, and float32 rounding would break pivot ties
    differently); the model then solves in float32."""
    with jax.enable_x64(False):
        m32 = load_osim(PATH)
        info = m32.osim
        assert info.default.dtype == jnp.float32
        assert info.eliminated == model.osim.eliminated
        assert info.assembled == model.osim.assembled
        q = jnp.asarray(_poses(m32, 1, seed=5)[0], dtype=jnp.float32)
        poses = np.asarray(mbjax.body_poses(m32, q))
    for body in ("block", "link2"):
        p = poses[m32.body_index(body), :3, 3]
        assert abs(p[0]) < 1e-5 and abs(p[2]) < 1e-5


@pytest.mark.slow
@pytest.mark.extended  # 30-55 s of compilation
def test_gravity_only_motion_conserves_energy(model):
    """mbjax.simulate on the reduced model (gravity only: the file's contact, bushing and limit
    forces are force elements, not part of forward_dynamics) keeps T + V constant."""
    q0 = model.osim.default
    qd0 = jnp.asarray([0.3, 0.0, 0.5, -0.4])
    sol = mbjax.simulate(model, q0, qd0, 0.0, 0.3, saveat=jnp.linspace(0.0, 0.3, 4), rtol=1e-10, atol=1e-12)
    qs, qds = sol.ys
    energy = np.array([float(mbjax.total_energy(model, q, qd)) for q, qd in zip(qs, qds)])
    assert float(qs[0][1] - qs[-1][1]) > 0.1  # the block fell
    assert np.ptp(energy) < 1e-9 * np.max(np.abs(energy))


def test_3x_property_names(tmp_path, model):
    """OpenSim 3.x names the bodies ``<line_body>`` / ``<follower_body>`` (bare names)."""
    with open(PATH) as fh:
        text = fh.read()
    for old, new in (("<socket_line_body>/ground</socket_line_body>", "<line_body>ground</line_body>"),
                     ("<socket_follower_body>/bodyset/block</socket_follower_body>", "<follower_body>block</follower_body>"),
                     ("<socket_follower_body>/bodyset/link2</socket_follower_body>", "<follower_body>link2</follower_body>")):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "bb_3x_names.osim"
    path.write_text(text)
    m = load_osim(str(path))
    assert m.osim.eliminated == model.osim.eliminated
    assert m.osim.assembled == model.osim.assembled


def test_scaling_an_eliminated_model_is_refused(model):
    """The constraint's solve reads a copy of the unscaled geometry: scaling would be silently wrong."""
    from mbjax.analysis.identify import scale_kinematics, scale_model, segment_names

    for scale in (scale_model, scale_kinematics):
        with pytest.raises(NotImplementedError, match=f"{scale.__name__}: .*PointOnLineConstraint.*not implemented"):
            scale(model, {"block": 1.1})
    assert "block" in segment_names(model)  # naming the segments is fine


def test_fitting_copied_geometry_is_refused(model):
    """mbjax.analysis.identify.fit of offsets, axes or joint maps would leave the loop's copy behind."""
    from mbjax.analysis import identify as idf

    with pytest.raises(NotImplementedError, match=r"fitting \['offset'\].*PointOnLineConstraint"):
        idf.Selection(model, lambda m: m.offset)
    assert idf.Selection(model, lambda m: m.mass, idf.Positive(index=[model.body_index("block")])).n == 1
