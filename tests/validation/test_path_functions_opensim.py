"""OpenSim 4.6 reads the FunctionBasedPaths mbjax writes, and mbjax reads OpenSim's (marker ``validation``).

* arm26 with a random polynomial path function of both coordinates (order 3 or 4, lengths about
  0.2-0.4 m) for every muscle, written by :func:`mbjax.io.write_osim`: OpenSim's
  ``Muscle.getLength`` and ``computeMomentArm`` at random poses equal mbjax's lengths and moment arms
  (of the written model and of the model loaded back).
* The same functions written as a ``Set_FunctionBasedPath_`` file
  (:func:`mbjax.io.write_path_functions`): ``opensim.SetFunctionBasedPaths`` reads it, and
  ``ModOpReplacePathsWithFunctionBasedPaths`` applied to the original arm26 gives the same numbers.
* OpenSim's own example (Moco ``example3DWalking``: ``subject_walk_scaled.osim`` and its
  ``subject_walk_scaled_FunctionBasedPathSet.xml``, 80 muscles, 3 coordinates and order 5 at most)
  read by :func:`mbjax.io.read_path_functions` equals OpenSim with the set applied, and written
  into the model's .osim copy it loads in OpenSim with the same numbers; read against
  Rajagopal2016 (``OPENSIM_MODELS_DIR``) it loads too, and a path naming a coordinate mbjax
  eliminates there (coupled ``knee_angle_r_beta``, locked ``mtp_angle_r``) is refused by name.
  The example's files come from an opensim-core checkout or git directory named by
  ``OPENSIM_CORE_DIR`` (skipped without one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import jax
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import load_osim, read_path_functions, write_osim, write_path_functions  # noqa: E402
from mbjax.maps.multivariate import multivariate_exponents  # noqa: E402
from mbjax.muscles.path_functions import with_path_functions  # noqa: E402

from _osim_models import RAJAGOPAL, needs_rajagopal  # noqa: E402

jax.config.update("jax_enable_x64", True)

TOL = 1e-9  # m (lengths) and m/rad (moment arms)
EXAMPLE = "OpenSim/Examples/Moco/example3DWalking"
CORE = os.environ.get("OPENSIM_CORE_DIR", "")


def _functions(model, seed=0):
    """A polynomial of both coordinates per muscle: 0.3 m plus terms a_t Π (q_i / 3)^e_ti with
    a_t ~ N(0, 0.01), so every length stays within about 0.2-0.4 m over the arm's range."""
    rng = np.random.default_rng(seed)
    coords = tuple(model.coordinate_names)
    out = {}
    for k, name in enumerate(model.muscles.names):
        order = 3 + k % 2
        e = multivariate_exponents(len(coords), order)
        c = rng.normal(scale=0.01, size=e.shape[0]) / 3.0 ** e.sum(axis=1)
        c[0] = 0.3
        out[name] = (coords, order, c)
    return out


def _poses(model, n, seed=1):
    info = model.osim
    lo, hi = np.asarray(info.lower), np.asarray(info.upper)
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, len(lo)))


def _opensim_numbers(model, muscles, coordinates, poses):
    """OpenSim's lengths ``(T, nm)`` and moment arms ``(T, nq, nm)`` at ``poses`` (T, nq)."""
    state = model.initSystem()
    cs = model.getCoordinateSet()
    coords = [cs.get(c) for c in coordinates]
    ms = [model.getMuscles().get(m) for m in muscles]
    lengths = np.zeros((len(poses), len(ms)))
    arms = np.zeros((len(poses), len(coords), len(ms)))
    for t, q in enumerate(poses):
        for c, v in zip(coords, q):
            c.setValue(state, float(v), False)
        model.realizePosition(state)
        for k, m in enumerate(ms):
            lengths[t, k] = m.getLength(state)
            for i, c in enumerate(coords):
                arms[t, i, k] = m.computeMomentArm(state, c)
    return lengths, arms


def _mbjax_numbers(model, poses):
    lengths = np.stack([np.asarray(mbjax.muscle_lengths(model, q)) for q in poses])
    arms = np.stack([np.asarray(mbjax.moment_arms(model, q)) for q in poses])
    return lengths, arms


def _compare(ours, theirs):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=TOL)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=0, atol=TOL)


@pytest.fixture(scope="module")
def arm26():
    return mbjax.models.load("arm26")


@pytest.fixture(scope="module")
def arm26_functions(arm26):
    return with_path_functions(arm26, _functions(arm26))


def test_opensim_evaluates_the_written_model_as_mbjax(arm26_functions, tmp_path):
    model = arm26_functions
    path = write_osim(model, tmp_path / "arm26_functions.osim")
    poses = _poses(model, 20)
    ours = _mbjax_numbers(model, poses)
    assert 0.15 < ours[0].min() and ours[0].max() < 0.45  # plausible lengths
    opensim_model = osim.Model(str(path))
    for name in model.muscles.names:
        assert opensim_model.getMuscles().get(name).getPath().getConcreteClassName() == "FunctionBasedPath"
    theirs = _opensim_numbers(opensim_model, model.muscles.names, model.coordinate_names, poses)
    _compare(ours, theirs)
    _compare(_mbjax_numbers(load_osim(path), poses), theirs)


def test_opensim_reads_the_written_path_function_set(arm26, arm26_functions, tmp_path):
    path = write_path_functions(arm26_functions, tmp_path / "arm26_FunctionBasedPathSet.xml")
    paths = osim.SetFunctionBasedPaths(str(path))
    names = list(arm26.muscles.names)
    assert [paths.get(i).getName() for i in range(paths.getSize())] == [f"/forceset/{n}" for n in names]
    processor = osim.ModelProcessor(mbjax.models.model_path("arm26"))
    processor.append(osim.ModOpReplacePathsWithFunctionBasedPaths(str(path)))
    poses = _poses(arm26, 20, seed=2)
    theirs = _opensim_numbers(processor.process(), names, arm26.coordinate_names, poses)
    _compare(_mbjax_numbers(arm26_functions, poses), theirs)
    _compare(_mbjax_numbers(with_path_functions(arm26, read_path_functions(path, arm26)), poses), theirs)


# --------------------------------------------------------------------------------------------
# OpenSim's own example (Moco example3DWalking)
# --------------------------------------------------------------------------------------------


def _core_file(name, directory) -> str:
    """``EXAMPLE/name`` from the opensim-core checkout or git directory ``OPENSIM_CORE_DIR``."""
    if not CORE:
        pytest.skip("set OPENSIM_CORE_DIR to an opensim-core checkout (or its git directory) for the Moco example")
    out = os.path.join(str(directory), name)
    if os.path.exists(out):
        return out
    source = os.path.join(CORE, EXAMPLE, name)
    if os.path.exists(source):
        with open(source, "rb") as fh, open(out, "wb") as dst:
            dst.write(fh.read())
        return out
    done = subprocess.run(["git", "--git-dir", CORE, "show", f"HEAD:{EXAMPLE}/{name}"], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"{EXAMPLE}/{name} not found in OPENSIM_CORE_DIR={CORE}")
    with open(out, "wb") as dst:
        dst.write(done.stdout)
    return out


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    directory = tmp_path_factory.mktemp("moco")
    return (_core_file("subject_walk_scaled.osim", directory),
            _core_file("subject_walk_scaled_FunctionBasedPathSet.xml", directory))


def test_opensim_example_set_reads_as_opensim_evaluates_it(example, tmp_path):
    model_file, set_file = example
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the model's own warnings (inertias)
        model = load_osim(model_file)
    functions = read_path_functions(set_file, model)
    assert len(functions) == 80 and max(order for _, order, _ in functions.values()) == 5
    ours_model = with_path_functions(model, functions)
    names = list(model.muscles.names)
    poses = _poses(model, 20)
    ours = _mbjax_numbers(ours_model, poses)
    processor = osim.ModelProcessor(model_file)
    processor.append(osim.ModOpReplacePathsWithFunctionBasedPaths(set_file))
    _compare(ours, _opensim_numbers(processor.process(), names, model.coordinate_names, poses))
    # the functions written into the 4.x model file load in OpenSim with the same numbers
    written = write_osim(ours_model, tmp_path / "subject_walk_functions.osim")
    _compare(ours, _opensim_numbers(osim.Model(written), names, model.coordinate_names, poses))


@needs_rajagopal
def test_opensim_example_set_against_rajagopal2016(example, tmp_path):
    _, set_file = example
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(RAJAGOPAL)
    functions = read_path_functions(set_file, model)
    assert len(functions) == 80
    text = open(set_file).read()
    for path, why in (("/jointset/patellofemoral_r/knee_angle_r_beta", "coupled"),
                      ("/jointset/mtp_r/mtp_angle_r", "locked")):
        bad = tmp_path / f"{why}.xml"
        bad.write_text(text.replace("/jointset/walker_knee_r/knee_angle_r", path, 1))
        with pytest.raises(NotImplementedError) as info:
            read_path_functions(bad, model)
        msg = str(info.value)
        for part in (str(bad), path.rsplit("/", 1)[1], why, "coordinate_paths", "muscle '"):
            assert part in msg, (part, msg)
