"""mbjax.config.single_threaded_matmuls: XLA_FLAGS set before JAX starts, refused (with a warning) after.
Each case runs in a fresh Python process, since XLA reads its flags once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, os, warnings
import mbjax
from mbjax.cpu_threads import FLAG
out = {}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out["first"] = mbjax.config.single_threaded_matmuls()
    import jax, jax.numpy as jnp
    a = jnp.arange(9.0).reshape(3, 3)
    out["product"] = (a @ a.T).tolist()  # the backend starts with the flag and computes
    out["again"] = mbjax.config.single_threaded_matmuls()
    out["warned"] = [str(x.message) for x in w]
out["flags"] = os.environ.get("XLA_FLAGS", "")
out["flag"] = FLAG
print("RESULT " + json.dumps(out))
"""


def _run(flags=None, before=""):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    env["MBJAX_XLA_DEFAULTS"] = "1"  # only this module's flag (the emitters' flag: tests/test_fast_compiles.py)
    if flags is not None:
        env["XLA_FLAGS"] = flags
    proc = subprocess.run([sys.executable, "-c", before + SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_sets_the_flag_before_jax_starts():
    out = _run()
    assert out["first"] is True and out["flag"] in out["flags"].split()
    assert out["product"] == [[5.0, 14.0, 23.0], [14.0, 50.0, 86.0], [23.0, 86.0, 149.0]]  # numpy's A Aᵀ by hand
    assert out["again"] is True and not out["warned"]  # already set: nothing to do, no warning
    assert out["flags"].split().count(out["flag"]) == 1


def test_refuses_after_jax_started_and_keeps_a_users_own_setting():
    late = _run(before="import jax.numpy as jnp\njnp.zeros(1).block_until_ready()\n")
    assert late["first"] is False and late["flag"] not in late["flags"]
    assert any("already running" in m for m in late["warned"])
    own = _run(flags="--xla_cpu_multi_thread_eigen=true")
    assert own["first"] is False and own["flags"] == "--xla_cpu_multi_thread_eigen=true" and not own["warned"]
