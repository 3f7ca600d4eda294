"""Pose sweeps: one per-pose function over many poses, on every device of every process.

:func:`sweep_poses` evaluates ``fn(model, q)`` (any pure per-pose function of the public API,
e.g. :func:`mbjax.moment_arms`, :func:`mbjax.muscle_lengths`, or a function returning a pytree of
them) at poses ``qs (N, nq)``:

* compiled once per (``fn``, model structure, chunk shape): the poses go through in fixed-size
  chunks, the last one padded with copies of the last pose, so memory is bounded for any N;
* each chunk is split over the local devices with ``jax.shard_map`` (several GPUs, or several
  CPU devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=K``); on each device the
  share is evaluated ``batch_size`` poses at a time by ``jax.lax.map`` (a vmap of cache-sized
  groups, fastest on CPU) or all at once by ``jax.vmap`` (GPU);
* under ``jax.distributed`` with several processes (hosts, or one process per GPU under SLURM),
  process ``p`` takes the contiguous poses ``[p S, (p+1) S)`` with ``S = ceil(N / P)``, the
  processes step through their chunks together, and after each chunk the results are gathered
  with ``multihost_utils.process_allgather`` so that **every process** returns the full results
  in the order of ``qs``.  ``qs`` must be the same array on every process (checked).

:func:`initialize` starts ``jax.distributed`` from arguments, ``MBJAX_*`` environment variables
or a SLURM / Open MPI allocation, and does nothing for a single process, so the same script runs
on a laptop, a multi-GPU node and a cluster.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import checks, checks_enabled
from .._model import Model
from .._ranges import warn_far_outside_ranges
from ..io.arguments import positive_int

__all__ = ["initialize", "sweep_poses", "default_chunk_size", "default_batch_size"]

_ENV_COORDINATOR = "MBJAX_COORDINATOR"
_ENV_NUM_PROCESSES = "MBJAX_NUM_PROCESSES"
_ENV_PROCESS_ID = "MBJAX_PROCESS_ID"

#: poses per local device and chunk: CPU chunks stay a few MB; accelerators take one big vmap.
CPU_CHUNK_PER_DEVICE = 4096
ACCELERATOR_CHUNK_PER_DEVICE = 65536
#: poses vmapped together inside a device's share on CPU (cache-sized; 32-64 is best measured).
CPU_BATCH_SIZE = 64


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None


def _cluster_process_count() -> int | None:
    """Number of tasks of a SLURM step or an Open MPI job this process belongs to (else None)."""
    slurm = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")
    if all(v in os.environ for v in slurm):
        return int(os.environ["SLURM_NTASKS"])
    if "OMPI_COMM_WORLD_SIZE" in os.environ and "OMPI_MCA_orte_hnp_uri" in os.environ:
        return int(os.environ["OMPI_COMM_WORLD_SIZE"])
    return None


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids=None,
    **kwargs: Any,
) -> bool:
    """Start ``jax.distributed`` if this program runs as several processes; ``True`` if it does.

    Call it first, before any JAX computation (``jax.distributed.initialize`` must come before
    the backends start).  Each argument left ``None`` is read from the environment:
    ``MBJAX_COORDINATOR`` (``host:port`` of process 0), ``MBJAX_NUM_PROCESSES``,
    ``MBJAX_PROCESS_ID``.  With none of them set, a SLURM step (``srun``, one task per
    process, ``SLURM_NTASKS > 1``) or an Open MPI job is detected and JAX reads its own
    settings from it (under SLURM on GPUs, one GPU per task).  A single process (nothing
    set, ``num_processes == 1``, or a one-task allocation) is a no-op returning ``False``,
    and so is a second call once ``jax.distributed`` is running (returning ``True``).
    ``local_device_ids`` and other keyword arguments go to ``jax.distributed.initialize``.

    On CPU, cross-process collectives use gloo (set here when the installed JAX has none
    selected).
    """
    if jax.distributed.is_initialized():
        return True
    if coordinator_address is None:
        coordinator_address = os.environ.get(_ENV_COORDINATOR, "").strip() or None
    if num_processes is None:
        num_processes = _env_int(_ENV_NUM_PROCESSES)
    if process_id is None:
        process_id = _env_int(_ENV_PROCESS_ID)
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"initialize: num_processes must be >= 1, got {num_processes}")
    if num_processes == 1:
        return False
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"initialize: process_id must be in [0, {num_processes}), got {process_id}")
    given = {"coordinator_address": coordinator_address, "num_processes": num_processes, "process_id": process_id}
    cluster = _cluster_process_count()
    if all(v is None for v in given.values()):
        if cluster is None or cluster == 1:
            return False  # a single process: nothing to start
    elif cluster is None and any(v is None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        raise ValueError(
            f"initialize: {', '.join(missing)} not given and no SLURM / Open MPI job detected; pass "
            f"coordinator_address, num_processes and process_id or set {_ENV_COORDINATOR}, "
            f"{_ENV_NUM_PROCESSES} and {_ENV_PROCESS_ID}"
        )
    try:  # older JAX selected no CPU collectives by default; multi-process CPU needs them
        if jax.config.jax_cpu_collectives_implementation in (None, "none"):
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except AttributeError:
        pass
    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               local_device_ids=local_device_ids, **kwargs)
    return True


def _on_cpu(devices) -> bool:
    return all(d.platform == "cpu" for d in devices)


def default_chunk_size(devices=None) -> int:
    """Poses per chunk and process: 4096 per local CPU device, 65536 per local accelerator."""
    devices = jax.local_devices() if devices is None else devices
    per = CPU_CHUNK_PER_DEVICE if _on_cpu(devices) else ACCELERATOR_CHUNK_PER_DEVICE
    return per * len(devices)


def default_batch_size(devices=None) -> int | None:
    """Poses vmapped together inside a device's share: 64 on CPU, ``None`` (all) on accelerators."""
    devices = jax.local_devices() if devices is None else devices
    return CPU_BATCH_SIZE if _on_cpu(devices) else None


def _per_device(fn, model, x, batch_size):
    def one(q):
        return fn(model, q)

    if batch_size is None or batch_size >= x.shape[0]:
        return jax.vmap(one)(x)
    return jax.lax.map(one, x, batch_size=batch_size)


@eqx.filter_jit
def _evaluate(fn, model, x, batch_size, mesh):
    """``fn`` at the poses ``x`` of one chunk; ``fn``, ``batch_size`` and ``mesh`` are static."""
    if mesh is None:
        return _per_device(fn, model, x, batch_size)
    arrays, static = eqx.partition(model, eqx.is_array)
    spec = jax.sharding.PartitionSpec("pose")

    def body(arrays, x):
        # run-time value checks (eqx.error_if) do not type-check inside shard_map's manual axes;
        # sweep_poses checks the poses on the host instead
        with checks(False):
            return _per_device(fn, eqx.combine(arrays, static), x, batch_size)

    return jax.shard_map(body, mesh=mesh, in_specs=(jax.sharding.PartitionSpec(), spec), out_specs=spec)(arrays, x)


def _check_call(fn, model) -> None:
    """``fn`` a per-pose function and ``model`` no function or name: the call is ``sweep_poses(fn, model, qs)``."""
    form = "the call is sweep_poses(fn, model, qs), e.g. sweep_poses(mbjax.moment_arms, model, qs)"
    if not callable(fn):
        swapped = " (fn and model swapped?)" if callable(model) else ""
        raise TypeError(f"sweep_poses: fn must be a per-pose function fn(model, q), got {type(fn).__name__} "
                        f"{str(fn)[:60]!r}{swapped}; {form}")
    if isinstance(model, (str, bytes)) or (callable(model) and not isinstance(model, eqx.Module)):
        raise TypeError(f"sweep_poses: model must be an mbjax Model (or the pytree fn takes), got "
                        f"{type(model).__name__} {str(model)[:60]!r}; {form}")


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def sweep_poses(
    fn: Callable,
    model,
    qs,
    *,
    chunk_size: int | None = None,
    batch_size: int | None | str = "auto",
    progress: bool = True,
    desc: str | None = None,
):
    """``fn(model, q)`` at every pose of ``qs (N, nq)``; a pytree of NumPy arrays with leading axis N.

    Equal to ``jax.vmap(fn, in_axes=(None, 0))(model, qs)`` (to rounding), computed chunk by
    chunk over the local devices and, under ``jax.distributed`` (see :func:`initialize`), over
    all processes; every process returns the full result in the order of ``qs``.

    ``fn`` takes ``(model, q)`` with one pose ``q (nq,)`` and returns an array or a pytree of
    arrays (e.g. :func:`mbjax.moment_arms`); pass the same function object to reuse the
    compilation across calls.  ``model`` is any pytree (a :class:`mbjax.Model`).  ``qs`` must be
    identical on every process (all processes compute the same checksum; a mismatch raises).

    ``chunk_size`` is the number of poses a process evaluates per step, all its local devices
    together (rounded up to a multiple of their number; default :func:`default_chunk_size`:
    4096 per CPU device, 65536 per GPU); memory grows with it, not with N.  ``batch_size`` is
    how many poses are vmapped together inside a device's share (``"auto"``: 64 on CPU, all
    on accelerators; ``None``: all).  ``progress`` shows a tqdm bar (process 0 only) counting
    the poses of all processes.
    """
    from tqdm import tqdm

    _check_call(fn, model)
    qs_np = np.asarray(qs)
    if qs_np.ndim != 2:
        raise ValueError(f"sweep_poses: qs must have shape (N, nq), got {qs_np.shape}")
    n, nq = qs_np.shape
    if isinstance(model, Model) and nq != model.n_coordinates:
        m = model.n_coordinates
        raise ValueError(f"sweep_poses: qs must have shape (N, nq) = (N, {m}), one row per pose, for coordinates "
                         f"{tuple(model.coordinate_names)}, got {qs_np.shape}"
                         + (" (transposed? pass qs.T)" if n == m else ""))
    if checks_enabled() and np.issubdtype(qs_np.dtype, np.inexact) and not np.all(np.isfinite(qs_np)):
        bad = np.argwhere(~np.isfinite(qs_np))[0]
        raise ValueError(f"sweep_poses: qs contains NaN or inf (first at pose {bad[0]}, coordinate {bad[1]})")
    if checks_enabled() and isinstance(model, Model):
        warn_far_outside_ranges(model, qs_np, "sweep_poses")
    devices = jax.local_devices()
    n_dev = len(devices)
    n_proc = jax.process_count()
    rank = jax.process_index()
    if chunk_size is None:
        chunk_size = default_chunk_size(devices)
    chunk_size = positive_int(chunk_size, "chunk_size", "sweep_poses")
    if isinstance(batch_size, str) and batch_size == "auto":
        batch_size = default_batch_size(devices)
    elif batch_size is not None:
        try:
            batch_size = positive_int(batch_size, "batch_size", "sweep_poses")
        except ValueError:
            raise ValueError(f"sweep_poses: batch_size must be a positive integer, None or 'auto', got "
                             f"{batch_size!r}") from None
    if n_proc > 1:
        from jax.experimental import multihost_utils

        crc = zlib.crc32(np.ascontiguousarray(qs_np).tobytes()) & 0x7FFFFFFF
        check = np.array([n % 2**31, nq, crc], dtype=np.int32)  # int32: also without x64
        try:
            multihost_utils.assert_equal(check, "sweep_poses: qs differs between processes.")
        except AssertionError as e:
            raise ValueError(str(e)) from None

    shard = -(-n // n_proc)  # poses per process (the last one padded)
    chunk = _round_up(max(1, min(int(chunk_size), shard)), n_dev)
    steps = -(-shard // chunk) if n else 0
    mesh = None
    sharding = None
    if n_dev > 1:
        mesh = jax.sharding.Mesh(np.asarray(devices), ("pose",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("pose"))

    if n == 0:
        out_struct = jax.eval_shape(lambda m, x: _evaluate(fn, m, x, batch_size, mesh), model,
                                    jax.ShapeDtypeStruct((chunk, nq), jnp.asarray(qs_np[:0]).dtype))
        return jax.tree.map(lambda s: np.empty((0,) + s.shape[1:], s.dtype), out_struct)

    def real(p: int, k: int):
        """Global row range of the real poses of process ``p``'s chunk ``k``."""
        lo = min(n, p * shard + k * chunk)
        hi = min(n, p * shard + min(shard, (k + 1) * chunk))
        return lo, max(lo, hi)

    def launch(k: int):
        lo, hi = real(rank, k)
        block = qs_np[lo:hi]
        if hi - lo < chunk:  # pad with copies of a real pose: same shape, no recompile
            fill = qs_np[hi - 1 : hi] if hi > lo else qs_np[-1:]
            block = np.concatenate([block, np.repeat(fill, chunk - (hi - lo), 0)])
        x = jax.device_put(block, sharding) if sharding is not None else jnp.asarray(block)
        return _evaluate(fn, model, x, batch_size, mesh)

    label = desc or getattr(fn, "__name__", "sweep")
    if n_proc > 1:
        label += f" ({n_proc} processes)"
    with tqdm(total=n, disable=not progress or rank != 0, unit="pose", desc=label) as bar:
        pending = launch(0)
        outs = treedef = None
        for k in range(steps):
            result = pending
            if k + 1 < steps:  # dispatch the next chunk before waiting on this one
                pending = launch(k + 1)
            local, treedef = jax.tree.flatten(jax.tree.map(np.asarray, result))
            if outs is None:
                outs = [np.empty((n,) + leaf.shape[1:], leaf.dtype) for leaf in local]
            if n_proc > 1:
                gathered = multihost_utils.process_allgather(local)  # each (n_proc, chunk, ...)
            else:
                gathered = [leaf[None] for leaf in local]
            done = 0
            for p in range(n_proc):
                lo, hi = real(p, k)
                done += hi - lo
                for out, g in zip(outs, gathered):
                    out[lo:hi] = g[p, : hi - lo]
            bar.update(done)
    return jax.tree.unflatten(treedef, outs)
