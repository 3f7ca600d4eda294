"""Infeasibility report of static optimization (frames × coordinates whose torque is not met).

Policy: the solvers never raise (they are jitted/vmapped); every result carries the torque
``residual`` R F + τ_r - τ and a ``converged`` flag.  Without reserve actuators a frame whose
torque the muscles cannot produce (too weak, or no muscle crossing a coordinate) comes back
with the best iterate found, ``converged = False`` and a non-zero residual on the offending
coordinates.  :func:`infeasibility_report` (host side) lists every (frame, coordinate) with
|residual| > ``tol`` and every non-converged frame; :func:`check_feasible` raises
:class:`InfeasibleError` carrying that report.  OpenSim's analogue is the "model appears
unsuitable for static optimization ... constraint violation" warning of
``StaticOptimization::record`` (tolerance 1e-6 on accelerations); here ``tol`` is in N·m (N for
translational coordinates), 1e-6 by default (use a looser one for float32 runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._checks import names as name_list


@dataclass
class InfeasibilityReport:
    """``entries``: (frame, coordinate name, residual) with |residual| > ``tol``;
    ``frames``/``coordinates``: the distinct offenders; ``not_converged``: frames whose solver did
    not reach its KKT tolerance.  Truthy when anything is listed."""

    tol: float
    entries: list = field(default_factory=list)
    not_converged: list = field(default_factory=list)
    times: object = None

    @property
    def frames(self) -> list[int]:
        return sorted({f for f, _, _ in self.entries})

    @property
    def coordinates(self) -> list[str]:
        return sorted({c for _, c, _ in self.entries})

    def __bool__(self):
        return bool(self.entries) or bool(self.not_converged)

    def __str__(self):
        if not self:
            return f"static optimization feasible: every |residual| <= {self.tol:g}"
        lines = [f"static optimization infeasible at {len(self.frames)} frame(s) "
                 f"(|R F + tau_r - tau| > {self.tol:g}); add reserve actuators or strengthen the muscles:"]
        for f, c, r in self.entries[:50]:
            t = "" if self.times is None else f" (t = {float(self.times[f]):.6g})"
            lines.append(f"  frame {f}{t}: {c}: residual = {r:.6g}")
        if len(self.entries) > 50:
            lines.append(f"  ... {len(self.entries) - 50} more")
        if self.not_converged:
            lines.append(f"  solver not converged at frames {self.not_converged[:20]}"
                         + (" ..." if len(self.not_converged) > 20 else "")
                         + " (an unconverged frame may still be feasible: muscle weights spanning more than a "
                         "factor 1000, or solver_options, can stop the solver short)")
        return "\n".join(lines)


class InfeasibleError(RuntimeError):
    """Raised by :func:`check_feasible`; ``.report`` is the :class:`InfeasibilityReport`."""

    def __init__(self, report: InfeasibilityReport):
        super().__init__(str(report))
        self.report = report


def _same_model(result, model) -> None:
    """Refuse a model other than the result's: its muscle count must match the result's activations
    (the result holds no names, so a model with as many coordinates would otherwise label it)."""
    muscles = tuple(getattr(getattr(model, "muscles", None), "names", ()))
    nm = np.shape(result.activations)[-1] if np.ndim(result.activations) else None
    nq = np.shape(result.residual)[-1] if np.ndim(result.residual) else None
    if nm is not None and nm != len(muscles):
        raise ValueError(f"infeasibility_report: the result is of a model with {nm} muscles and {nq} coordinates, but "
                         f"the model given has {len(muscles)} muscles {list(muscles)[:8]} and coordinates "
                         f"{list(model.coordinate_names)}; pass the model the result was computed for")


def infeasibility_report(result, coordinate_names=None, tol: float = 1e-6, times=None) -> InfeasibilityReport:
    """Report of a one-frame or trajectory :class:`StaticOptimizationResult` (module docstring).
    ``coordinate_names`` may be a model (its ``coordinate_names``) or a sequence of names."""
    if not (hasattr(result, "residual") and hasattr(result, "converged")):
        raise TypeError(f"infeasibility_report: result must be a StaticOptimizationResult (from static_optimization "
                        f"or solve_problem), got {type(result).__name__}")
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"infeasibility_report: tol must be a finite number >= 0 (N·m), got {tol!r}")
    res = np.asarray(result.residual)
    if res.ndim not in (1, 2):
        raise ValueError(f"infeasibility_report: result.residual must have shape (nq,) or (T, nq), got {res.shape}")
    res = np.atleast_2d(res)
    conv = np.atleast_1d(np.asarray(result.converged))
    if conv.shape != (res.shape[0],):
        raise ValueError(f"infeasibility_report: result.converged has shape {conv.shape} but result.residual has "
                         f"{res.shape[0]} frame(s)")
    if coordinate_names is not None and hasattr(coordinate_names, "coordinate_names"):
        _same_model(result, coordinate_names)
        coordinate_names = coordinate_names.coordinate_names
    names = (list(name_list(coordinate_names, "coordinate_names", "infeasibility_report"))
             if coordinate_names is not None else [f"q{j}" for j in range(res.shape[1])])
    if len(names) != res.shape[1]:
        raise ValueError(f"infeasibility_report: {len(names)} coordinate names {names} for a residual of "
                         f"{res.shape[1]} coordinates; pass the model the result was computed for")
    if times is not None and np.shape(times) != (res.shape[0],):
        raise ValueError(f"infeasibility_report: times must have one entry per frame ({res.shape[0]},), "
                         f"got shape {np.shape(times)}")
    bad = np.argwhere(~(np.abs(res) <= tol))
    entries = [(int(f), names[int(j)], float(res[f, j])) for f, j in bad]
    return InfeasibilityReport(float(tol), entries, [int(f) for f in np.nonzero(~conv)[0]], times)


def check_feasible(result, coordinate_names=None, tol: float = 1e-6, times=None) -> None:
    """Raise :class:`InfeasibleError` when :func:`infeasibility_report` lists anything."""
    rep = infeasibility_report(result, coordinate_names, tol, times)
    if rep:
        raise InfeasibleError(rep)
