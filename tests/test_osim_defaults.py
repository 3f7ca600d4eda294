"""A model's ``<defaults>`` objects, as OpenSim reads them: a muscle class's stands for the properties its
muscles leave out (checked against the same muscle with those values written out, and against OpenSim
4.6 in tests/validation/test_hill_opensim.py); those of a nested ``<ForceSet>`` are ignored with a
warning, as OpenSim ignores them; any other class's is refused where it would apply."""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from _two_link_muscles import muscle, two_link

DEFAULTS = {"FmaxTendonStrain": 0.033, "KshapeActive": 0.5, "Af": 0.3, "Flen": 1.8}


def defaults_block(values=DEFAULTS, cls="Thelen2003Muscle"):
    props = "".join(f"<{k}>{v}</{k}>" for k, v in values.items())
    return f'<defaults><{cls} name="default">{props}</{cls}></defaults>'


def with_model_defaults(text, block):
    return text.replace('<Ground name="ground">', block + '<Ground name="ground">', 1)


def test_defaults_object_equals_the_values_written_out(tmp_path):
    implicit = tmp_path / "implicit.osim"
    implicit.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1")), defaults_block()))
    explicit = tmp_path / "explicit.osim"
    written = "".join(f"<{k}>{v}</{k}>" for k, v in DEFAULTS.items())
    explicit.write_text(two_link(muscle("Thelen2003Muscle", "m1", extra=written)))
    a, b = load_osim(str(implicit)), load_osim(str(explicit))
    pa, pb = mbjax.muscles.hill_parameters(a), mbjax.muscles.hill_parameters(b)
    for key, value in DEFAULTS.items():
        assert float(pa[key][0]) == value == float(pb[key][0])
    q, qd, act = jnp.array([0.4, 0.9]), jnp.array([0.3, -0.2]), jnp.array([0.6])
    np.testing.assert_array_equal(mbjax.muscle_forces(a, q, qd, act), mbjax.muscle_forces(b, q, qd, act))


def test_a_muscles_own_value_wins_over_the_defaults_object(tmp_path):
    path = tmp_path / "own.osim"
    path.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1", extra="<Af>0.2</Af>")),
                                        defaults_block()))
    p = mbjax.muscles.hill_parameters(load_osim(str(path)))
    assert float(p["Af"][0]) == 0.2 and float(p["FmaxTendonStrain"][0]) == 0.033
    # a defaults object of another class changes nothing here
    path.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1")),
                                        defaults_block(cls="Millard2012EquilibriumMuscle")))
    p = mbjax.muscles.hill_parameters(load_osim(str(path)))
    assert float(p["FmaxTendonStrain"][0]) == 0.04  # Thelen2003Muscle's own default


def test_defaults_inside_the_models_force_set_are_ignored_with_a_warning(tmp_path):
    """OpenSim 4.6 applies the ``<defaults>`` of the model (and of a force-set file read on its own), not
    those of the ``<ForceSet>`` inside a model (tests/validation/test_hill_opensim.py checks both live)."""
    import pytest

    ca = '<CoordinateActuator name="r1"><coordinate>q1</coordinate></CoordinateActuator>'
    block = defaults_block({"optimal_force": 300}, cls="CoordinateActuator")
    nested = tmp_path / "nested.osim"
    nested.write_text(two_link(ca).replace('<ForceSet name="forceset">', '<ForceSet name="forceset">' + block))
    with pytest.warns(UserWarning, match=r"nested\.osim:\d+: <defaults>: the <defaults> of the model's <ForceSet> "
                                         r"\(<CoordinateActuator>\) are ignored, as OpenSim 4\.6 ignores them"):
        model = load_osim(str(nested))
    assert model.osim.actuators[0].optimal_force == 1.0
    top = tmp_path / "top.osim"
    top.write_text(with_model_defaults(two_link(ca), block))
    assert load_osim(str(top)).osim.actuators[0].optimal_force == 300.0


def test_defaults_of_other_force_classes_are_refused_where_they_would_apply(tmp_path):
    """OpenSim applies a model's ``<defaults>`` to every class (a SpringGeneralizedForce without
    ``<viscosity>`` takes the default object's, 5 in tests/validation/test_hill_opensim.py's check);
    mbjax applies them to muscles and actuators, so any other element that would take one is refused."""
    import pytest

    spring = '<SpringGeneralizedForce name="s1"><coordinate>q1</coordinate><stiffness>2</stiffness>{}</SpringGeneralizedForce>'
    block = defaults_block({"viscosity": 5}, cls="SpringGeneralizedForce")
    path = tmp_path / "spring.osim"
    path.write_text(with_model_defaults(two_link(spring.format("")), block))
    with pytest.raises(NotImplementedError, match=r"spring\.osim:\d+: <SpringGeneralizedForce name='s1'>: "
                                                  r"SpringGeneralizedForce 's1' leaves out \['viscosity'\], which a "
                                                  r"<defaults> object of SpringGeneralizedForce sets \(the model's"):
        load_osim(str(path))
    path.write_text(with_model_defaults(two_link(spring.format("<viscosity>0.5</viscosity>")), block))
    assert float(load_osim(str(path)).forces.elements[0].viscosity[0]) == 0.5  # its own value: nothing to apply


def test_only_the_first_defaults_of_a_model_applies_with_a_warning(tmp_path):
    """OpenSim 4.6 reads a model's first ``<defaults>`` only (on this file it gives Af 0.3 from the first block,
    Flen 1.4, Thelen's own, though a second block sets 1.8)."""
    import pytest

    text = with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1")),
                               defaults_block({"Af": 0.3}) + defaults_block({"Flen": 1.8}))
    path = tmp_path / "two.osim"
    path.write_text(text)
    with pytest.warns(UserWarning, match=r"a second <defaults> \(the first is at line \d+\): OpenSim reads only the "
                                         r"first and ignores this one"):
        p = mbjax.muscles.hill_parameters(load_osim(str(path)))
    assert (float(p["Af"][0]), float(p["Flen"][0])) == (0.3, 1.4)


def test_a_setup_files_defaults_stand_for_what_the_model_leaves_out(tmp_path):
    """A tool's setup file is read before its model, and OpenSim's default objects are process-wide: the
    setup's ``<defaults>`` stand for what the model's muscles leave out, the model's own first
    ``<defaults>`` block coming later (it wins), the muscle's own values last (OpenSim 4.6 live:
    tests/validation/test_hill_opensim.py)."""
    from mbjax.opensim.setup_xml import SetupFile

    path = tmp_path / "m.osim"
    path.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1", extra="<KshapeActive>0.4</KshapeActive>")),
                                        defaults_block({"Af": 0.25})))
    setup = tmp_path / "setup.xml"
    setup.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><AnalyzeTool name="t">'
                     + defaults_block({"FmaxTendonStrain": 0.05, "Af": 0.4, "KshapeActive": 0.6})
                     + defaults_block({"FmaxTendonStrain": 0.07})  # a second block: OpenSim reads the first only
                     + f"<model_file>{path}</model_file></AnalyzeTool></OpenSimDocument>")
    prior = SetupFile(setup).defaults()
    assert len(prior) == 1
    p = mbjax.muscles.hill_parameters(load_osim(str(path), prior_defaults=prior))
    np.testing.assert_allclose(float(p["FmaxTendonStrain"][0]), 0.05, rtol=1e-7)
    np.testing.assert_allclose([float(p["Af"][0]), float(p["KshapeActive"][0])], [0.25, 0.4], rtol=1e-7)
    plain = mbjax.muscles.hill_parameters(load_osim(str(path)))
    np.testing.assert_allclose(float(plain["FmaxTendonStrain"][0]), 0.04, rtol=1e-7)  # Thelen's built-in default
    with pytest.raises(TypeError, match="prior_defaults must hold <defaults> XML elements"):
        load_osim(str(path), prior_defaults=["<defaults/>"])


def test_every_tool_loads_its_model_after_its_setups_defaults(tmp_path, monkeypatch):
    """IK, ID, SO and JR from a setup file pass the setup's ``<defaults>`` to the model they load (the
    loader is stopped there: the wiring, not the solve)."""
    import shutil

    from mbjax.models import model_path
    from mbjax.opensim.model import osim as osim_module
    from mbjax.opensim.tools.id import inverse_dynamics_from_setup
    from mbjax.opensim.tools.ik import inverse_kinematics_from_setup
    from mbjax.opensim.tools.jr import joint_reactions_from_setup
    from mbjax.opensim.tools.so import static_optimization_from_setup

    class Loaded(Exception):
        pass

    seen = []

    def capture(path, *args, prior_defaults=(), **kwargs):
        seen.append([el.tag for d in prior_defaults for el in d])
        raise Loaded

    monkeypatch.setattr(osim_module, "load_osim", capture)
    folder = tmp_path / "walk"
    shutil.copytree(os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk"), folder)
    block = defaults_block({"FmaxTendonStrain": 0.05})
    runs = {"subject01_Setup_IK.xml": inverse_kinematics_from_setup,
            "subject01_Setup_InverseDynamics.xml": inverse_dynamics_from_setup,
            "subject01_Setup_StaticOptimization.xml": static_optimization_from_setup}
    for name, run in runs.items():
        text = (folder / name).read_text()
        tool_start = text.index(">", text.index("Tool name=")) + 1
        (folder / name).write_text(text[:tool_start] + block + text[tool_start:])
        with pytest.raises(Loaded):
            run(folder / name)
    from test_jr_tool import _pendulum_files

    with pytest.raises(Loaded):
        joint_reactions_from_setup(_pendulum_files(tmp_path, extra=block))
    assert seen == [["Thelen2003Muscle"]] * 4
