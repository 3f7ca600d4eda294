"""Shared test setup: float64 everywhere (accuracy claims are made in float64)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import jax

jax.config.update("jax_enable_x64", True)


def pytest_sessionfinish(session, exitstatus):
    """Collect garbage now and freeze what is left, so the process ends quickly.

    Under ``pytest -n 2`` an xdist worker reports "finished" right after this hook; pytest then runs
    ``gc.collect()`` again (``pytest_unconfigure``), and execnet interrupts a worker still busy 5 s
    after the controller closes it (it sends itself SIGINT).  With the heap that JAX leaves behind
    (traced jaxprs, compiled-function caches) on 2 loaded cores that last collection took longer,
    and the SIGINT landed in hypothesis' gc callback: a stray ``KeyboardInterrupt`` traceback
    (``PytestUnraisableExceptionWarning``) at the end of a passing run.  Collecting here (no
    deadline yet) and ``gc.freeze()`` make the later collections scan nothing old.
    """
    import gc

    gc.collect()
    gc.freeze()
