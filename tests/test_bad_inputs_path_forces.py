"""Bad inputs to OpenSim's path forces as mbjax builds them (:class:`mbjax.forces.PathSpring`,
:class:`mbjax.forces.Ligament`, their base :class:`mbjax.forces.PathForce`): parameters refused by
element name at construction, poses and speeds of the wrong shape refused naming the elements and
the coordinates, a NaN pose caught by the run-time check.  Their properties in ``.osim`` files:
tests/test_path_springs.py; their numbers against OpenSim: tests/validation/test_path_springs_opensim.py."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.forces import Ligament, PathForce, PathSpring
from mbjax.io import load_osim
from _osim_text import write_text
from _path_spring_models import model_text

jax.config.update("jax_enable_x64", True)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(write_text(tmp_path_factory.mktemp("springs"), model_text()), ignore_wrapping=True)


def _of(model, cls):
    (e,) = [e for e in model.forces.elements if isinstance(e, cls)]
    return e


def _spring(ps, **change):
    kw = dict(paths=ps.paths, element_names=ps.names, resting_length=ps.resting_length, stiffness=ps.stiffness,
              dissipation=ps.dissipation)
    kw.update(change)
    return PathSpring(**kw)


def test_path_spring_parameters_refused_by_element(model):
    ps = _of(model, PathSpring)
    assert isinstance(ps, PathForce)
    with pytest.raises(ValueError, match=r"PathSpring 'ps': resting_length must be finite \(no NaN or inf\), got nan"):
        _spring(ps, resting_length=jnp.asarray([jnp.nan, 0.1]))
    with pytest.raises(ValueError, match=r"PathSpring: resting_length must have shape \(2,\) \(one row per element "
                                         r"\('ps', 'ps_wrap'\)\), got \(1,\)"):
        _spring(ps, resting_length=jnp.asarray([0.1]))
    with pytest.raises(TypeError, match=r"PathSpring: paths must be a MusclePaths .*got NoneType"):
        _spring(ps, paths=None)
    with pytest.raises(ValueError, match=r"PathSpring: paths \('ps', 'ps_wrap'\) must be the elements \('a', 'b'\)"):
        _spring(ps, element_names=("a", "b"))


def test_ligament_parameters_refused_by_element(model):
    lig = _of(model, Ligament)
    kw = dict(paths=lig.paths, element_names=lig.names, resting_length=lig.resting_length, pcsa_force=lig.pcsa_force,
              force_length_curve=lig.force_length_curve)
    with pytest.raises(ValueError, match=rf"Ligament {lig.names[0]!r}: pcsa_force must be >= 0, got -1.0"):
        Ligament(**{**kw, "pcsa_force": lig.pcsa_force.at[0].set(-1.0)})
    with pytest.raises(ValueError, match=rf"Ligament {lig.names[1]!r}: resting_length must be > 0, got 0.0"):
        Ligament(**{**kw, "resting_length": lig.resting_length.at[1].set(0.0)})


@pytest.mark.parametrize("cls", [PathSpring, Ligament])
def test_poses_and_speeds_of_the_wrong_shape_are_refused_by_name(model, cls):
    e = _of(model, cls)
    named = rf"\({cls.__name__} \({', '.join(repr(n) for n in e.names)}\)\) for coordinates \('a', 'b'\)"
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\) " + named + r", got \(3,\)"):
        e.tensions(model, jnp.zeros(3), jnp.zeros(2))
    with pytest.raises(ValueError, match=r"qd must have shape \(nq,\) = \(2,\) " + named + r", got \(5,\)"):
        e.generalized_force(model, jnp.zeros(2), jnp.zeros(5))
    with pytest.raises(Exception, match=r"q contains NaN or inf for coordinates \('a', 'b'\)"):
        jax.block_until_ready(e.tensions(model, jnp.array([jnp.nan, 0.0]), jnp.zeros(2)))
    good = np.asarray(e.tensions(model, jnp.array([0.3, -0.2]), jnp.zeros(2)))  # the valid twin
    assert good.shape == (len(e.names),) and np.all(np.isfinite(good))
