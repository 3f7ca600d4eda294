"""Shared test setup: float64 everywhere (accuracy claims are made in float64)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
# Tests compile far more than they run.  XLA's CPU backend is run with LLVM's optimisation level 0
# (XLA's default is 3): the suite is faster at level 0 (benchmarks/RESULTS.md), though the
# compiled code runs slower, which the few run-time-heavy tests pay back.
# The HLO (what is computed, in which order) is the same at every level and XLA's CPU backend
# uses no fast-math at any level, so results agree to rounding.  Notebook kernels inherit the
# setting.  Set MBJAX_TEST_XLA_OPT=1 to test with XLA's defaults.
if os.environ.get("MBJAX_TEST_XLA_OPT") != "1" and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

# XLA:CPU's elemental emitters, as ``import mbjax`` sets them for users (mbjax/fast_compiles.py): less
# compile time; set here so that notebook kernels and subprocesses inherit them too
from mbjax.fast_compiles import faster_compiles  # noqa: E402

faster_compiles()

# Every module's compiled programs are dropped at its end (see ``pytest_runtest_teardown``), and
# many modules compile the same programs (a model's lengths, moment arms, dynamics); both xdist
# workers and the notebook kernels share one persistent cache, so a program is compiled once per
# run.  It lives in this checkout's ``.pytest_cache`` (a fresh clone starts empty); set
# JAX_COMPILATION_CACHE_DIR to move it, or MBJAX_TEST_NO_XLA_CACHE=1 to compile everything.
if os.environ.get("MBJAX_TEST_NO_XLA_CACHE") != "1":
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                          os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                       ".pytest_cache", "jax-compilation-cache"))
    # every program, tiny ones included: eager model building and checks compile dozens of small
    # programs per module, dropped at its end (below), which the next module reads back instead
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# notebook 12 fits every path of MoBL-ARMS and Rajagopal2016 (20-40 minutes on 2 cores) where their files are
# found; its kernel skips those fits in the suite (what they use is tested on its own; see the notebook)
os.environ.setdefault("MBJAX_NOTEBOOK_FULL_MODELS", "0")

import jax

jax.config.update("jax_enable_x64", True)


def _record_compile_times(path):
    """With MBJAX_TEST_COMPILES=FILE, append each trace, lowering and XLA compilation (a read from the
    persistent cache included) with its program's name and the test that asked for it: where the
    suite's time goes, program by program."""
    from jax import monitoring

    events = {"/jax/core/compile/backend_compile_duration": "compile",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
              "/jax/core/compile/jaxpr_trace_duration": "trace"}

    def listener(event, duration, **kwargs):
        if event in events and duration > 0.05:
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
            with open(path, "a") as fh:
                fh.write(f"{duration:.2f}\t{events[event]}\t{kwargs.get('fun_name', '?')}\t{test}\n")

    monitoring.register_event_duration_secs_listener(listener)


if os.environ.get("MBJAX_TEST_COMPILES"):
    _record_compile_times(os.environ["MBJAX_TEST_COMPILES"])


def pytest_runtest_teardown(item, nextitem):
    """Drop JAX's compiled executables at the end of each test module.

    Every XLA:CPU executable keeps its own memory mappings (LLVM's JIT code and data sections), and
    JAX's caches keep every executable alive: one xdist worker running half of the suite passed
    Linux's 65530 mappings per process (``vm.max_map_count``), and the next compile died with a
    segmentation fault inside ``backend_compile_and_load`` (seen twice in CI, in different tests).
    Measured: 300 mappings per test on average, ~10 000 after tests/test_maps.py, ~1 000 after
    ``jax.clear_caches()``.  Only what a later module calls again is recompiled, so the caches are
    dropped only once the worker holds :data:`_MAX_MAPPINGS` mappings or :data:`_MAX_RSS_KB` of memory
    (a program shared by several modules, e.g. arm26's muscle functions, is traced once until then).
    """
    if nextitem is None or nextitem.path != item.path:
        mappings, rss = _process_footprint()
        if mappings > _MAX_MAPPINGS or rss > _MAX_RSS_KB:
            import gc

            jax.clear_caches()
            gc.collect()


#: the footprint past which a worker drops JAX's caches (Linux allows 65 530 mappings per process)
_MAX_MAPPINGS = 20_000
_MAX_RSS_KB = 2_000_000


def _process_footprint() -> tuple[int, int]:
    """``(memory mappings, resident kB)`` of this process (``(inf, inf)`` where /proc cannot say: drop)."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            mappings = sum(1 for _ in fh)
        with open("/proc/self/status") as fh:
            rss = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
        return mappings, rss
    except (OSError, StopIteration, ValueError):
        return float("inf"), float("inf")


def pytest_runtest_logreport(report):
    """With MBJAX_TEST_DURATIONS=FILE, append each phase's duration as it ends (a run stopped early
    still says where its time went; ``--durations`` reports only at the end)."""
    path = os.environ.get("MBJAX_TEST_DURATIONS")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{report.duration:.2f}\t{report.when}\t{report.outcome}\t{report.nodeid}\n")


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
