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
