"""``import mbjax`` selects XLA:CPU's elemental emitters (mbjax/fast_compiles.py) before JAX's backends
start, only where jaxlib knows the flag, never over a user's own ``XLA_FLAGS`` or after JAX started,
and the programs compute the same numbers as with XLA's default emitters.  Each case runs in a fresh
Python process, since XLA reads its flags once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np

from mbjax.fast_compiles import FLAG, faster_compiles, jaxlib_knows_flag

SCRIPT = r"""
import json, os, sys
import mbjax
out = {"flags": os.environ.get("XLA_FLAGS", ""), "jax_imported": "jax" in sys.modules}
out["again"] = mbjax.config.faster_compiles()
if os.environ.get("COMPUTE") != "1":
    print("RESULT " + json.dumps(out))
    raise SystemExit
import jax
jax.config.update("jax_enable_x64", True)
model = mbjax.models.load("gait10dof18musc")
q = jax.numpy.linspace(-0.3, 0.4, model.osim.lower.shape[0])
out["forces"] = jax.jit(mbjax.inverse_dynamics)(model, q, 0.5 * q, -q).tolist()
out["mass"] = jax.jit(mbjax.mass_matrix)(model, q).tolist()
print("RESULT " + json.dumps(out))
"""


def _run(flags=None, keep_defaults=False, compute=False):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MBJAX_XLA_DEFAULTS")}
    env["JAX_PLATFORMS"] = "cpu"
    if flags is not None:
        env["XLA_FLAGS"] = flags
    if keep_defaults:
        env["MBJAX_XLA_DEFAULTS"] = "1"
    if compute:
        env["COMPUTE"] = "1"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_import_sets_the_emitters_and_the_numbers_equal_xlas_defaults():
    # at XLA's optimisation level 0 (the suite's; the emitters are chosen at every level)
    fast = _run(flags="--xla_backend_optimization_level=0", compute=True)
    known = jaxlib_knows_flag()  # a jaxlib without the flag gets none (XLA aborts on unknown flags)
    assert fast["flags"].split()[1:] == ([FLAG] if known else []) and fast["again"] is known
    assert not fast["jax_imported"]
    default = _run(flags="--xla_backend_optimization_level=0", keep_defaults=True, compute=True)
    assert default["flags"] == "--xla_backend_optimization_level=0" and default["again"] is False
    assert _run()["flags"].split() == ([FLAG] if known else [])  # no XLA_FLAGS of the user's
    # the same HLO through two code generators: equal to rounding
    for key in ("forces", "mass"):
        np.testing.assert_allclose(fast[key], default[key], rtol=1e-13, atol=1e-15)
    assert np.ptp(fast["forces"]) > 1.0 and np.abs(np.diag(fast["mass"])).min() > 0


def test_a_users_own_setting_is_kept():
    own = _run(flags="--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=1")
    assert own["flags"] == "--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=1"
    assert own["again"] is False
    other = _run(flags="--xla_backend_optimization_level=1")  # another option: the emitters' flag is added
    assert other["flags"].split() == ["--xla_backend_optimization_level=1"] + ([FLAG] if jaxlib_knows_flag() else [])


def test_after_jax_started_nothing_changes(monkeypatch):
    jnp.zeros(1).block_until_ready()  # JAX runs in this process
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("MBJAX_XLA_DEFAULTS", raising=False)
    assert faster_compiles() is False and "XLA_FLAGS" not in os.environ


def test_only_flags_jaxlib_knows_are_set():
    assert jaxlib_knows_flag("xla_backend_optimization_level")  # a flag every jaxlib has
    assert not jaxlib_knows_flag("xla_cpu_no_such_flag_in_any_jaxlib")
