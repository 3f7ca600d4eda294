"""Every ``.osim`` file anywhere in OpenSim's model repository loads in mbjax, as OpenSim 4.6 reads it.

tests/validation/test_opensim_library.py compares the files of ``Models/`` in depth; the repository
holds more (``Pipelines/``, ``Tutorials/``, ``notebooks/``: scaled and adjusted subjects, and files
of older document versions, e.g. the 3.x layout at version 30000 and the 30501 joints with
``<connectors>``).  Point ``OPENSIM_MODELS_DIR`` at a checkout (the folder holding ``Models/``);
the tests skip when it is unset.

* Every file loads with :func:`mbjax.io.load_osim` as written (no refusal, no option).
* For every file outside ``Models/`` (with the ``opensim`` package): every OpenSim body's transform
  in ground equals mbjax's at the default pose and at two random poses inside the coordinate
  ranges, and every path's length (wrapping stripped from both) equals OpenSim's at those two poses.
"""

from __future__ import annotations

import functools
import glob
import os
import warnings
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax import body_poses
from mbjax.io import load_osim
from mbjax.opensim.model.osim import default_pose
from mbjax.muscles import muscle_lengths
from _osim_models import strip_wrapping

pytestmark = pytest.mark.validation

ROOT = os.environ.get("OPENSIM_MODELS_DIR", "")
FILES = sorted(os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, "**", "*.osim"), recursive=True)) \
    if ROOT else []
#: the files test_opensim_library.py does not compare with OpenSim
OUTSIDE_MODELS = [f for f in FILES if not f.startswith("Models" + os.sep)]
N_POSES = 2
TOL = dict(pose=1e-12, length=1e-9)


def _params(files):
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="set OPENSIM_MODELS_DIR to a checkout of "
                                                              "opensim-org/opensim-models"))]
    return files


@functools.lru_cache(maxsize=None)
def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(path)


@pytest.mark.parametrize("rel", _params(FILES))
def test_every_file_loads(rel):
    model = _load(os.path.join(ROOT, rel))
    assert model.coordinate_names


def _poses(model, n, seed):
    info = model.osim
    lo = np.maximum(np.asarray(info.lower), -3.0)
    hi = np.minimum(np.asarray(info.upper), 3.0)
    rng = np.random.default_rng(seed)
    return 0.5 * (lo + hi) + 0.4 * (hi - lo) * rng.uniform(-1, 1, size=(n, lo.size))


@pytest.mark.parametrize("rel", _params(OUTSIDE_MODELS))
def test_file_outside_models_matches_opensim(rel, tmp_path):
    pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")
    from mbjax.opensim.opensim_reference import OpenSimReference

    source = os.path.join(ROOT, rel)
    model = _load(source)
    names = model.coordinate_names
    qs = np.vstack([np.asarray(default_pose(model))[None], _poses(model, N_POSES, zlib.crc32(rel.encode()))])
    poses = np.asarray(jax.jit(jax.vmap(body_poses, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    # straight-line paths (wrapping is compared with OpenSim in test_wrapping_opensim.py)
    straight = strip_wrapping(source, str(tmp_path / os.path.basename(source)))
    ref = OpenSimReference(straight)
    paths = list(ref.paths)
    if paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bare = load_osim(straight)
        index = {n: i for i, n in enumerate(bare.muscle_names)}
        lengths = np.asarray(jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(bare, jnp.asarray(qs[1:])))
        lengths = lengths[:, [index[n] for n in paths]]
    worst = dict(pose=0.0, length=0.0)
    for k, q in enumerate(qs):
        ref.set(names, q)
        for b in ref.model.getBodySet():
            r, p = ref.body_pose(b.getName())
            t = poses[k, model.body_index(b.getName())]
            worst["pose"] = max(worst["pose"], np.abs(t[:3, :3] - r).max(), np.abs(t[:3, 3] - p).max())
        if paths and k > 0:
            os_lengths = np.array([ref.paths[n].getLength(ref.state) for n in paths])
            worst["length"] = max(worst["length"], np.abs(os_lengths - lengths[k - 1]).max())
    bad = {k: v for k, v in worst.items() if not v <= TOL[k]}
    assert not bad, f"{rel}: mbjax and OpenSim differ by {bad}"
