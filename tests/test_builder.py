"""ModelBuilder's checks and the inertia consistency messages it raises on."""

import numpy as np
import pytest

import mbjax
from mbjax._inertia import inertia_problems


def test_inertia_problems_lists_each_problem():
    assert inertia_problems("a", 1.0, np.diag([1.0, 2.0, 2.5])) == []
    assert inertia_problems("a", 0.0, np.zeros((3, 3))) == []
    (msg,) = inertia_problems("a", 1.0, np.diag([1.0, 1.0, 3.0]))
    assert "'a'" in msg and "triangle inequality" in msg
    probs = inertia_problems("b", -1.0, [[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert any("mass must be" in p for p in probs) and any("not symmetric" in p for p in probs)
    assert any("zero mass" in p for p in inertia_problems("c", 0.0, np.eye(3)))
    assert any("finite 3x3" in p for p in inertia_problems("d", 1.0, np.ones((2, 2))))


def test_builder_raises_on_inertia_problems():
    b = mbjax.ModelBuilder(["q"])
    with pytest.raises(ValueError, match="body 'a'.*triangle inequality"):
        b.add_body("a", map="q", mass=1.0, inertia=[1.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="not a unit vector"):
        b.add_body("a", map="q", axis=[0, 0, 2])
    model = b.add_body("a", map="q", mass=1.0, inertia=[1.0, 2.0, 2.5]).build()
    assert model.body_names == ("a",)


def test_model_elements_are_named_fields_and_the_old_dict_is_deprecated():
    """``model.muscles`` / ``.forces`` / ``.path_functions`` / ``.osim`` replace the ``extras`` dict;
    the dict and ``with_extras`` still answer, with a DeprecationWarning, and a model pickled with
    the dict (an older native file) loads into the fields."""
    import warnings

    import mbjax
    from mbjax._model import Model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arm = mbjax.models.load("arm26", ignore_wrapping=True)
    assert arm.muscle_names == tuple(arm.muscles.names) and arm.forces is None and arm.path_functions is None
    with pytest.warns(DeprecationWarning, match="model.muscles"):
        old = arm.extras
    assert old["muscles"] is arm.muscles and old["osim"] is arm.osim and set(old) == {"muscles", "osim"}
    with pytest.warns(DeprecationWarning, match="replace"):
        bare = arm.with_extras({"osim": arm.osim})
    assert bare.muscles is None and bare.osim is arm.osim
    with pytest.raises(ValueError, match=r"unknown model element\(s\) \['ligaments'\]"):
        arm.replace(**mbjax._model.element_fields({"ligaments": 1}, "test"))
    with pytest.raises(TypeError, match=r"Model.replace: no field \['extras'\]"):
        arm.replace(extras={})
    state = {k: v for k, v in arm.__dict__.items() if k not in ("muscles", "forces", "path_functions", "osim")}
    state["extras"] = {"muscles": arm.muscles, "osim": arm.osim}
    loaded = Model.__new__(Model)
    loaded.__setstate__(state)
    assert loaded.muscles is arm.muscles and loaded.osim is arm.osim and loaded.forces is None
