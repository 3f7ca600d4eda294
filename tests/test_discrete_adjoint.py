"""mbjax.DiscreteAdjoint: gradients vs diffrax's RecursiveCheckpointAdjoint and finite differences,
forward outputs identical to diffrax's, one compile, vmap, the step-buffer error, scope errors."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.analysis import identify as idf
from mbjax.io import load_urdf
from _trees import urdf_tree

jax.config.update("jax_enable_x64", True)

T1 = 0.4
TS = jnp.linspace(0.0, T1, 9)


def _case(n=2):
    model = load_urdf(urdf_tree(n, 3, True))
    nq = model.n_coordinates
    return (model, idf.ViscousDamping(jnp.full(nq, 0.2)), jnp.linspace(0.4, -0.3, nq), jnp.linspace(0.5, 1.0, nq))


def _ys(tree, adjoint, saveat=TS, **kw):
    model, damper, q0, qd0 = tree
    return mbjax.simulate(model, q0, qd0, 0.0, T1, saveat=saveat, forces=damper, adjoint=adjoint, **kw).ys


def _loss(tree, adjoint, saveat=TS, **kw):
    q, qd = _ys(tree, adjoint, saveat, **kw)
    return jnp.sum(jnp.sin(q) ** 2) + 0.3 * jnp.sum(qd * q)


def _rel(a, b):
    """Largest relative difference over the leaves (each leaf against its own scale)."""
    return max(float(np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-300))
               for x, y in zip(jax.tree.leaves(eqx.filter(a, eqx.is_inexact_array)),
                               jax.tree.leaves(eqx.filter(b, eqx.is_inexact_array))))


def _grads(tree, adjoint, saveat=TS, **kw):
    return jax.value_and_grad(_loss)(tree, adjoint, saveat, **kw)


KW = dict(rtol=1e-11, atol=1e-11)  # the adaptive configuration most tests share (one compile)


@pytest.mark.extended  # 40 s of compilation; the adaptive test checks the same agreement in CI
def test_constant_steps_equal_recursive_checkpoint():
    """Fixed steps: both differentiate the identical discrete map (Tsit5, FSAL), so the gradients
    (all model arrays, damping, q0, q̇0) agree to rounding; t0, ts and t1 outputs carry cotangents."""
    tree = _case()
    saveat = diffrax.SaveAt(t0=True, ts=TS[1:-1], t1=True)
    kw = dict(stepsize_controller=diffrax.ConstantStepSize(), dt0=0.013)
    v, g = _grads(tree, mbjax.DiscreteAdjoint(), saveat, **kw)
    v_ref, g_ref = _grads(tree, diffrax.RecursiveCheckpointAdjoint(), saveat, **kw)
    assert v == v_ref
    assert _rel(g, g_ref) < 1e-12
    assert float(jnp.max(jnp.abs(g[0].mass))) > 1e-3 and float(jnp.max(jnp.abs(g[1].c))) > 1e-3


def _fd_check(loss, tree, g, eps, tol):
    """Central differences of ``loss`` along single entries of the masses, damping, q0 and q̇0."""
    for get, i in ((lambda t: t[0].mass, 1), (lambda t: t[1].c, 0), (lambda t: t[2], 1), (lambda t: t[3], 0)):
        e = jnp.zeros_like(get(tree)).at[i].set(eps)
        plus, minus = eqx.tree_at(get, tree, get(tree) + e), eqx.tree_at(get, tree, get(tree) - e)
        fd = (float(loss(plus)) - float(loss(minus))) / (2 * eps)
        assert abs(float(get(g)[i]) - fd) <= tol * max(abs(fd), 1.0), (float(get(g)[i]), fd)


def test_constant_steps_non_fsal_solver_vs_finite_differences():
    """Heun (no FSAL, no dense interpolation of its own stages) with fixed steps: central differences."""
    tree = _case()
    kw = dict(solver=diffrax.Heun(), stepsize_controller=diffrax.ConstantStepSize(), dt0=0.01)
    _, g = _grads(tree, mbjax.DiscreteAdjoint(), **kw)
    _fd_check(jax.jit(lambda t: _loss(t, mbjax.DiscreteAdjoint(), **kw)), tree, g, 1e-6, 1e-7)


@pytest.mark.extended  # 27 s of compilation; the constant-step twin checks the same adjoint in CI
def test_adaptive_steps_vs_recursive_checkpoint_and_finite_differences():
    """PID steps: the step times are constants here; diffrax's PIDController also stops gradients
    through its step-size factor, so RecursiveCheckpointAdjoint agrees to rounding (stated bound
    1e-10).  Central differences of the loss (tolerance 1e-11: the solves' own noise) agree to 1e-6."""
    tree = _case()
    v, g = _grads(tree, mbjax.DiscreteAdjoint(), **KW)
    v_ref, g_ref = _grads(tree, diffrax.RecursiveCheckpointAdjoint(), **KW)
    # the losses of two differentiated programs: equal to rounding (XLA fuses each its own way)
    assert abs(float(v) - float(v_ref)) <= 8 * np.finfo(float).eps * abs(float(v_ref))
    assert _rel(g, g_ref) < 1e-10
    # the loss outside jit: its solve is the compiled forward that test_forward_outputs_identical_to_diffrax
    # runs too (one program for both)
    _fd_check(lambda t: _loss(t, mbjax.DiscreteAdjoint(), **KW), tree, g, 1e-5, 1e-6)


def test_forward_outputs_identical_to_diffrax():
    """Outputs of the plain call equal diffrax's bit for bit; those of the differentiated forward (the
    same steps in another program: JAX linearizes it, XLA fuses and rounds its operations otherwise)
    to rounding."""
    tree = _case()
    ref = _ys(tree, diffrax.RecursiveCheckpointAdjoint(), **KW)
    plain = _ys(tree, mbjax.DiscreteAdjoint(), **KW)
    diffed, _ = jax.vjp(lambda t: _ys(t, mbjax.DiscreteAdjoint(), **KW), tree)
    for a, b, c in zip(plain, diffed, ref):
        assert bool(jnp.all(a == c))
        np.testing.assert_allclose(b, c, rtol=0, atol=8 * np.finfo(float).eps * float(jnp.max(jnp.abs(c))))


def _count_traces(monkeypatch):
    from mbjax import _simulate

    counted = eqx.debug.assert_max_traces(_simulate._integrate, max_traces=1)
    monkeypatch.setattr(_simulate, "_integrate", counted)
    return counted


def test_compiles_once_for_new_parameters(monkeypatch):
    """New masses, damping and initial states: at most one trace of the solve under jax.grad (none
    when an earlier test of this module compiled the same configuration)."""
    counted = _count_traces(monkeypatch)
    model, damper, q0, qd0 = _case()
    grad = jax.grad(lambda t: _loss(t, mbjax.DiscreteAdjoint(), **KW))
    for s in (1.0, 1.3, 0.8):
        tree = (eqx.tree_at(lambda m: m.mass, model, model.mass * s), idf.ViscousDamping(damper.c * s), q0 * s, qd0)
        g = grad(tree)
        assert np.all(np.isfinite(np.asarray(g[0].mass)))
    assert eqx.debug.get_num_traces(counted) <= 1


@pytest.mark.extended  # ~50 s of compilation
def test_vmapped_over_initial_states_and_multiple_shooting():
    """jax.vmap of the gradient over initial states equals the single gradients; multiple shooting
    (a vmapped solve over segments) takes the adjoint: its gradient vs central differences."""
    model, damper, q0, qd0 = _case()
    q0s = q0 + jnp.array([[0.0, 0.0], [0.1, -0.2], [-0.3, 0.05]])
    grad = lambda q: jax.grad(_loss)((model, damper, q, qd0), mbjax.DiscreteAdjoint(), **KW)  # noqa: E731
    g = jax.vmap(grad)(q0s)
    for i in range(q0s.shape[0]):
        assert _rel(jax.tree.map(lambda a: a[i], g), grad(q0s[i])) < 1e-12

    ts = jnp.linspace(0.0, 0.6, 13)
    q_meas = mbjax.simulate(model, q0, qd0, 0.0, 0.6, saveat=ts, forces=damper).ys[0] + 0.01
    term = idf.multiple_shooting(ts, q_meas, 3, adjoint=mbjax.DiscreteAdjoint(), rtol=1e-11, atol=1e-11)
    tree = (model, damper, term.initial_states())
    ms_loss = lambda t: 0.5 * jnp.sum(term(t) ** 2)  # noqa: E731
    g = jax.grad(ms_loss)(tree)
    rng = np.random.default_rng(0)
    d = jax.tree.map(lambda a: jnp.asarray(rng.normal(size=a.shape)), eqx.filter(tree, eqx.is_inexact_array))
    d = eqx.tree_at(lambda t: t[0], d, jax.tree.map(jnp.zeros_like, d[0]))  # the damping and the segment states
    d = eqx.tree_at(lambda t: t[0].mass, d, jnp.asarray(np.random.default_rng(1).normal(size=model.mass.shape)),
                    is_leaf=lambda x: x is None)
    slope = sum(float(jnp.vdot(a, b)) for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(d)))
    eps, loss = 1e-5, jax.jit(ms_loss)
    arrays = eqx.filter(tree, eqx.is_inexact_array)
    shift = lambda s: eqx.combine(jax.tree.map(lambda a, b: a + s * b, arrays, d), tree)  # noqa: E731
    fd = (float(loss(shift(eps))) - float(loss(shift(-eps)))) / (2 * eps)
    assert abs(slope - fd) <= 1e-6 * max(abs(fd), 1.0), (slope, fd)


def test_too_many_steps_for_the_buffer_raises():
    """A differentiated solve needing more steps than the buffer raises (also with throw=False);
    the undifferentiated call does not use the buffer."""
    tree = _case()
    small = mbjax.DiscreteAdjoint(max_steps=5)
    _ys(tree, small)  # forward only: fine
    with pytest.raises(Exception, match="DiscreteAdjoint"):
        jax.block_until_ready(jax.grad(_loss)(tree, small))
    with pytest.raises(Exception, match="DiscreteAdjoint"):
        jax.block_until_ready(jax.grad(_loss)(tree, small, throw=False))


def test_unsupported_uses_raise():
    tree = _case()
    with pytest.raises(NotImplementedError, match="Kvaerno5"):
        _ys(tree, mbjax.DiscreteAdjoint(), solver=diffrax.Kvaerno5())
    with pytest.raises(NotImplementedError, match="dense"):
        _ys(tree, mbjax.DiscreteAdjoint(), diffrax.SaveAt(dense=True))
    with pytest.raises(NotImplementedError, match="steps"):
        _ys(tree, mbjax.DiscreteAdjoint(), diffrax.SaveAt(steps=True))
    with pytest.raises(ValueError, match="max_steps"):
        mbjax.DiscreteAdjoint(max_steps=0)
    # forward mode is not provided (custom VJP), nor are gradients with respect to the times
    with pytest.raises(TypeError):
        jax.jvp(lambda q: _ys((tree[0], tree[1], q, tree[3]), mbjax.DiscreteAdjoint())[0], (tree[2],), (tree[2],))
    model, damper, q0, qd0 = tree
    with pytest.raises(Exception, match="cannot be autodifferentiated"):
        jax.grad(lambda t1: jnp.sum(mbjax.simulate(model, q0, qd0, 0.0, t1, forces=damper,
                                                   adjoint=mbjax.DiscreteAdjoint()).ys[0]))(0.3)


@pytest.mark.extended  # ~20 s of compilation
def test_float32_runs():
    """float32 runs; its gradient is the float64 one to float32's tolerance."""
    model, damper, q0, qd0 = _case()
    f32 = lambda x: jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, x)  # noqa: E731
    g = jax.grad(_loss)(f32((model, damper, q0, qd0)), mbjax.DiscreteAdjoint(), TS.astype(jnp.float32),
                        rtol=1e-5, atol=1e-6)
    g64 = jax.grad(_loss)((model, damper, q0, qd0), mbjax.DiscreteAdjoint(), **KW)
    assert g[0].mass.dtype == jnp.float32
    assert _rel(g, g64) < 1e-3
