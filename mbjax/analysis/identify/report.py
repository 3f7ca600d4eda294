"""What :func:`mbjax.analysis.identify.fit` returns beside the fitted tree."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class FitReport:
    """Loss and gradient-norm history (one entry per step, index 0 = the start), steps taken,
    wall time (compile included, and ``compile_s`` the first step's share), ``converged`` (the
    tolerance was met before ``max_steps``) and the free vector ``theta`` with its ``names``."""

    method: str
    loss: np.ndarray
    grad_norm: np.ndarray
    steps: int
    wall_s: float
    compile_s: float
    converged: bool
    message: str
    theta: np.ndarray
    names: tuple[str, ...]

    @property
    def final_loss(self) -> float:
        return float(self.loss[-1])

    def __str__(self) -> str:
        return (
            f"{self.method}: {self.steps} steps, loss {self.loss[0]:.6g} -> {self.final_loss:.6g}, "
            f"|grad|_inf {self.grad_norm[-1]:.3g}, {'converged' if self.converged else 'NOT converged'} "
            f"({self.message}), {self.wall_s:.2f} s ({self.compile_s:.2f} s first step)"
        )
