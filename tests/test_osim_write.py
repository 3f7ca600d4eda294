"""Writing fitted values back into a copy of an .osim file (mbjax.io.write_osim).

Independent check: the copy is read back by the loader (a separate code path, the XML parser) and
every written quantity (masses, centres of mass, inertias, path points, muscle parameters, marker
offsets) comes back bit for bit, lengths and mass matrices equal; the rest of the document
(joints, coordinates, comments) is unchanged.  OpenSim 4.6 reading the copy:
tests/validation/test_osim_write_opensim.py.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_markers, load_osim, write_osim

jax.config.update("jax_enable_x64", True)

GAIT = os.path.join(mbjax.models.pipeline_path("gait2354_walk"), "subject01_simbody.osim")


def perturbed(model, seed=0):
    """The model with new masses, centres of mass, inertias (kept physical), path points and muscle
    parameters: what an identification returns."""
    rng = np.random.default_rng(seed)
    nb = model.n_bodies
    has_mass = np.asarray(model.mass) > 0
    scale = rng.uniform(0.8, 1.2, nb)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0] * 0.05  # a small rotation of each inertia's axes
    rot = np.eye(3) + R - R.T
    inertia = np.einsum("ab,nbc,dc->nad", rot, np.asarray(model.inertia), rot) * scale[:, None, None]
    inertia = 0.5 * (inertia + np.swapaxes(inertia, 1, 2))  # symmetric to the bit: the file holds 6 numbers
    m = eqx.tree_at(lambda x: (x.mass, x.com, x.inertia), model,
                    (model.mass * scale, model.com + rng.normal(0, 0.01, (nb, 3)) * has_mass[:, None],
                     jnp.asarray(inertia)))
    p = model.muscles
    p = eqx.tree_at(lambda x: (x.location, x.parameters["max_isometric_force"], x.parameters["optimal_fiber_length"],
                               x.parameters["tendon_slack_length"]), p,
                    (p.location + rng.normal(0, 0.003, p.location.shape), p.parameters["max_isometric_force"] * 1.1,
                     p.parameters["optimal_fiber_length"] * 0.95, p.parameters["tendon_slack_length"] * 1.02))
    return m.replace(muscles=p)


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("source", [mbjax.models.model_path("arm26"), GAIT], ids=["arm26-3.x", "gait2354-4.x"])
def test_written_values_read_back_exactly(source, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(source, ignore_wrapping=True)
        markers = load_markers(source, model)
    fitted = perturbed(model)
    rng = np.random.default_rng(1)
    moved = eqx.tree_at(lambda mk: mk.offset, markers, markers.offset + rng.normal(0, 0.01, markers.offset.shape))
    out = write_osim(fitted, tmp_path / "fitted.osim", markers=moved)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = load_osim(out, ignore_wrapping=True)
        back_markers = load_markers(out, back)
    for get in (lambda m: m.mass, lambda m: m.com, lambda m: m.inertia):
        _same(get(back), get(fitted))
    p, pb = fitted.muscles, back.muscles
    moving = np.zeros(p.location.shape[:2], bool)  # a MovingPathPoint's location is its functions'
    for slots in p.moving_slots:
        for m, k, _ in slots:
            moving[m, k] = True
    keep = np.asarray(p.valid) & ~moving
    _same(np.asarray(pb.location)[keep], np.asarray(p.location)[keep])
    for key in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length"):
        _same(pb.parameters[key], p.parameters[key])
    _same(back_markers.offset, moved.offset)
    q = jnp.asarray(rng.uniform(-0.4, 0.4, model.n_coordinates))
    _same(mbjax.muscle_lengths(back, q), mbjax.muscle_lengths(fitted, q))
    _same(mbjax.mass_matrix(back, q), mbjax.mass_matrix(fitted, q))
    assert float(jnp.abs(mbjax.muscle_lengths(model, q) - mbjax.muscle_lengths(fitted, q)).max()) > 1e-3
    # the rest of the document is as it was: joints, coordinates, comments
    a, b = ET.parse(source).getroot(), ET.parse(out).getroot()
    for tag in ("JointSet", "ConstraintSet"):
        ea, eb = a.find(f"Model/{tag}"), b.find(f"Model/{tag}")
        assert (ea is None) == (eb is None)
        if ea is not None:
            assert ET.tostring(ea) == ET.tostring(eb)
    def n_comments(path):
        parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
        return sum(callable(e.tag) for e in ET.parse(path, parser).getroot().iter())

    assert n_comments(out) == n_comments(source) or n_comments(source) == 0


def test_non_finite_value_is_refused_naming_the_body(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True)
    bad = eqx.tree_at(lambda m: m.mass, model, model.mass.at[1].set(jnp.nan))
    with pytest.raises(ValueError, match=r"arm26.osim:\d+: <Body name='r_humerus'>: <mass> would be \[nan\]"):
        write_osim(bad, tmp_path / "bad.osim")
    assert not (tmp_path / "bad.osim").exists()
