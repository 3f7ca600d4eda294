"""Physical consistency of a body's mass and inertia tensor (about its centre of mass).

:func:`inertia_problems` lists what is wrong, so that a caller chooses the policy: the builder
raises on the list, an importer of third-party files may only warn.
"""

from __future__ import annotations

import numpy as np


def inertia_problems(name: str, mass: float, inertia, tol: float = 1e-12) -> list[str]:
    """Messages naming body ``name``'s problems; empty when ``mass`` and ``inertia`` (3x3) are physical.

    Checked: finite non-negative mass; a finite, symmetric, positive semidefinite tensor whose
    principal moments satisfy the triangle inequality; no inertia without mass.
    """
    problems = []
    if not np.isfinite(mass) or mass < 0:
        problems.append(f"body {name!r}: mass must be finite and >= 0, got {mass}")
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        return problems + [f"body {name!r}: inertia must be a finite 3x3 matrix, got {inertia!r}"]
    scale = max(1.0, float(np.max(np.abs(inertia))))
    if np.max(np.abs(inertia - inertia.T)) > 1e-9 * scale:
        problems.append(f"body {name!r}: inertia tensor is not symmetric:\n{inertia}")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if eig.min() < -tol * scale:
        problems.append(f"body {name!r}: inertia tensor is not positive (semi)definite, eigenvalues {eig}")
    # a real mass distribution satisfies the triangle inequality on principal moments
    a, b, c = np.sort(eig)
    if a + b < c - 1e-9 * scale:
        problems.append(
            f"body {name!r}: principal moments {eig} violate the triangle inequality "
            "(no physical mass distribution has them)"
        )
    if mass == 0 and np.max(np.abs(inertia)) > 0:
        problems.append(f"body {name!r}: zero mass with non-zero inertia")
    return problems
