"""OpenSim 4.6 reads the wrap-object dimensions, placements and coordinate ranges that
mbjax.io.write_osim writes for a model changed after loading (marker ``validation``)."""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import load_osim, write_osim  # noqa: E402

jax.config.update("jax_enable_x64", True)


def _wrap_objects(model):
    """name -> OpenSim wrap object, over every body's WrapObjectSet."""
    out = {}
    for i in range(model.getBodySet().getSize()):
        wset = model.getBodySet().get(i).getWrapObjectSet()
        for k in range(wset.getSize()):
            out[wset.get(k).getName()] = wset.get(k)
    return out


def test_opensim_reads_changed_wrap_objects_and_ranges(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(mbjax.models.model_path("arm26"))
    p = model.muscles
    w = p.wraps
    c, e = w.kinds.index("WrapCylinder"), w.kinds.index("WrapEllipsoid")
    dims = w.dimensions.at[c, 0].set(0.021).at[c, 1].set(0.06).at[e].multiply(1.1)
    trans = w.translation.at[c].add(jnp.array([0.001, -0.002, 0.003]))
    rot = w.rotation.at[e].set(w.rotation[e] @ jnp.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    wraps = eqx.tree_at(lambda x: (x.dimensions, x.translation, x.rotation), w, (dims, trans, rot))
    info = model.osim
    info = eqx.tree_at(lambda i: (i.lower, i.default), info, (info.lower.at[0].set(-0.1), info.default.at[0].set(0.2)))
    changed = model.replace(muscles=eqx.tree_at(lambda q: q.wraps, p, wraps), osim=info)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = write_osim(changed, tmp_path / "changed.osim")

    theirs = osim.Model(str(path))
    theirs.initSystem()
    objects = _wrap_objects(theirs)
    cyl = osim.WrapCylinder.safeDownCast(objects[w.names[c]])
    assert (cyl.get_radius(), cyl.get_length()) == (0.021, 0.06)
    ell = osim.WrapEllipsoid.safeDownCast(objects[w.names[e]])
    d = ell.get_dimensions()
    np.testing.assert_array_equal([d.get(0), d.get(1), d.get(2)], np.asarray(dims[e]))
    # the placements in the body frame (arm26's wrap objects sit on bodies, not offset frames)
    t = cyl.get_translation()
    np.testing.assert_allclose([t.get(0), t.get(1), t.get(2)], np.asarray(trans[c]), rtol=0, atol=1e-15)
    R = ell.getTransform().R()  # OpenSim's own reading of xyz_body_rotation
    np.testing.assert_allclose([[R.get(i, j) for j in range(3)] for i in range(3)], np.asarray(rot[e]),
                               rtol=0, atol=1e-14)
    coord = theirs.getCoordinateSet().get(changed.coordinate_names[0])
    assert (coord.getRangeMin(), coord.getDefaultValue()) == (-0.1, 0.2)
