"""A fifth outside survey's findings in float32: a closed chain assembles at float32 resolution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax


def test_the_fourbar_assembles_in_float32_and_a_far_guess_is_refused_with_its_residual():
    jax.config.update("jax_enable_x64", False)
    try:
        linkage = mbjax.models.fourbar.fourbar()  # refused before: the float64 threshold 1e-8 is below float32's
        f = np.asarray(linkage.constraint.f_ref)
        assert f.dtype == np.float32
        residual = np.abs(np.asarray(linkage.constraint.residual(linkage.constraint.f_ref, linkage.constraint.q_ref)))
        assert residual.max() < 1e3 * np.finfo(np.float32).eps
    finally:
        jax.config.update("jax_enable_x64", True)
    with pytest.raises(ValueError, match=r"does not converge to an assembled configuration \(residual .* after Newton\)"):
        mbjax.constraints.LoopConstraint(lambda p, f, q: jnp.array([f[0] ** 2 + 1.0]), {}, ["a"], ["f"],
                                         jnp.zeros(1), jnp.ones(1))
