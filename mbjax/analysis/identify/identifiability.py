"""Local identifiability at a fit's optimum: residual Jacobian, singular values, unidentifiable
parameter combinations (named), base parameters and standard errors.

With J = ∂r/∂θ at θ̂ (θ the free vector of ``where`` + parametrization, forward mode) and its
SVD J = U S Vᵀ, the rank is the number of singular values above ``rtol · s_max``; the right
singular vectors beyond it span the directions the data cannot see.  To *name* them, columns of J
are split by QR with column pivoting (``scipy.linalg.qr(J, pivoting=True)``, the usual base-
parameter construction of Gautier & Khalil): the first ``rank`` pivots are the base parameters
B, the rest D are dependent, with J_D = J_B β (β = R₁₁⁻¹ R₁₂).  Then

* each dependent θ_d gives one unidentifiable combination, the null vector e_d − Σ_b β_bd e_b;
* the identifiable (base) combinations are θ_b + Σ_d β_bd θ_d (what the data determine);
* with noise σ on every residual, Cov(base) = σ² (J_Bᵀ J_B)⁻¹ and, on the identifiable subspace,
  Cov(θ) = σ² V_r S_r⁻² V_rᵀ (the pseudo-inverse of JᵀJ).  A parameter with a component in the
  null space (‖P_null e_i‖ > 1e-6) has an infinite standard error.  ``sigma=None`` estimates
  σ² = ‖r‖² / (n − rank) from the residuals at θ̂.

For a model linear in θ (inverse dynamics in :class:`~mbjax.analysis.identify.StandardInertial`) this is
exact and global; otherwise local at θ̂.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .fit import host_tree, one_array
from .selection import Selection


def _combination(coefs, names, lead, tol=1e-9):
    """``"lead + 0.5·x − 2·y"`` from coefficients (``lead`` has coefficient 1)."""
    s = lead
    order = np.argsort(-np.abs(coefs))
    for i in order:
        c = coefs[i]
        if abs(c) <= tol:
            continue
        s += f" {'+' if c > 0 else '−'} {abs(c):.6g}·{names[i]}"
    return s


@dataclasses.dataclass
class Identifiability:
    """See the module notes.  ``theta`` at which it was evaluated, ``names`` of its entries."""

    names: tuple[str, ...]
    theta: np.ndarray
    jacobian: np.ndarray
    singular_values: np.ndarray
    rank: int
    null_space: np.ndarray  # (n_params, n_null), orthonormal
    base: tuple[int, ...]  # indices of base parameters
    dependent: tuple[int, ...]
    beta: np.ndarray  # (n_base, n_dep): J_D = J_B beta
    sigma: float
    covariance: np.ndarray  # σ² (JᵀJ)⁺
    standard_errors: np.ndarray  # inf where not identifiable
    identifiable: np.ndarray  # bool per parameter
    base_covariance: np.ndarray

    @property
    def unidentifiable(self) -> list[str]:
        """One string per null direction: ``"mass[b1] − 1·mass[b2]"`` (changing θ along it leaves r unchanged)."""
        out = []
        for k, d in enumerate(self.dependent):
            coefs = np.zeros(len(self.names))
            coefs[list(self.base)] = -self.beta[:, k]
            out.append(_combination(coefs, self.names, self.names[d]))
        return out

    @property
    def base_parameters(self) -> list[str]:
        """The identifiable combinations θ_b + Σ β θ_d (one per base parameter)."""
        out = []
        for i, b in enumerate(self.base):
            coefs = np.zeros(len(self.names))
            coefs[list(self.dependent)] = self.beta[i]
            out.append(_combination(coefs, self.names, self.names[b]))
        return out

    def base_values(self, theta=None) -> np.ndarray:
        """Values of the base combinations at ``theta`` (default: the evaluation point)."""
        t = self.theta if theta is None else np.asarray(theta)
        return t[list(self.base)] + self.beta @ t[list(self.dependent)]

    @property
    def base_standard_errors(self) -> np.ndarray:
        return np.sqrt(np.diag(self.base_covariance))

    def summary(self) -> str:
        lines = [f"{len(self.names)} parameters, rank {self.rank}, σ = {self.sigma:.4g}; singular values "
                 f"{self.singular_values.max():.3g} … {self.singular_values.min():.3g}"]
        for n, v, e in zip(self.names, self.theta, self.standard_errors):
            lines.append(f"  {n:<28} {v: .6g} ± {e:.3g}" if np.isfinite(e) else f"  {n:<28} {v: .6g}  (not identifiable)")
        if self.dependent:
            lines.append("unidentifiable combinations:")
            lines += [f"  {s}" for s in self.unidentifiable]
        return "\n".join(lines)


@eqx.filter_jit
def _jacobian(sel, theta, tree, residuals):
    """Forward-mode residual Jacobian (one compilation per selection and residual structure)."""
    f = lambda th: jnp.ravel(residuals(sel.apply(th, tree)))  # noqa: E731
    return jax.jacfwd(f)(theta), f(theta)


def _nonnegative(x) -> bool:
    """``x`` is one finite number >= 0."""
    try:
        return np.ndim(x) == 0 and bool(np.isfinite(float(x)) and float(x) >= 0)
    except (TypeError, ValueError):
        return False


def identifiability(tree, residuals, where, *, parametrization=None, sigma=None, rtol: float = 1e-8) -> Identifiability:
    """Identifiability of ``where(tree)`` from ``residuals(tree)`` at the current values (see module)."""
    if not _nonnegative(rtol):
        raise ValueError(f"identifiability: rtol must be a finite number >= 0 (singular values below rtol · s_max count "
                         f"as zero), got {rtol!r}")
    if sigma is not None and not _nonnegative(sigma):
        got = f"shape {np.shape(sigma)}" if np.ndim(sigma) else repr(sigma)
        raise ValueError(f"identifiability: sigma must be one finite number >= 0 (the noise standard deviation of every "
                         f"residual), got {got}; pass sigma=None to estimate it from the residuals")
    host_tree(tree, "identifiability")
    out = one_array(jax.eval_shape(residuals, tree), "identifiability", "residuals", "the residual vector")
    if out.shape == ():
        raise ValueError("identifiability: `residuals` returned a scalar; it needs the residual vector (e.g. "
                         "mbjax.analysis.identify.torque_residuals(...)), not a loss")
    if out.size == 0:
        raise ValueError("identifiability: `residuals` returned an empty residual (no samples?)")
    sel = Selection(tree, where, parametrization)
    theta = sel.theta(tree)
    jac, r = (np.asarray(x) for x in _jacobian(sel, theta, tree, residuals))
    n_res, n_par = jac.shape
    _, s, vt = np.linalg.svd(jac, full_matrices=True)
    smax = s.max() if s.size else 0.0
    rank = int(np.sum(s > rtol * smax)) if smax > 0 else 0
    null = vt[rank:].T
    _, rr, piv = scipy.linalg.qr(jac, mode="economic", pivoting=True)
    base, dep = piv[:rank], piv[rank:]
    if len(dep):
        beta = scipy.linalg.solve_triangular(rr[:rank, :rank], rr[:rank, rank:]) if rank else np.zeros((0, len(dep)))
    else:
        beta = np.zeros((rank, 0))
    if sigma is None:
        dof = max(n_res - rank, 1)
        sigma = float(np.sqrt(np.sum(r**2) / dof))
    vr, sr = vt[:rank].T, s[:rank]
    cov = sigma**2 * (vr / sr**2) @ vr.T
    in_null = np.linalg.norm(null, axis=1) if null.size else np.zeros(n_par)
    identifiable = in_null <= 1e-6
    se = np.where(identifiable, np.sqrt(np.clip(np.diag(cov), 0, None)), np.inf)
    jb = jac[:, base]
    base_cov = sigma**2 * np.linalg.inv(jb.T @ jb) if rank else np.zeros((0, 0))
    return Identifiability(
        names=sel.names, theta=np.asarray(theta), jacobian=jac, singular_values=s, rank=rank, null_space=null,
        base=tuple(int(i) for i in base), dependent=tuple(int(i) for i in dep), beta=beta, sigma=float(sigma),
        covariance=cov, standard_errors=se, identifiable=identifiable, base_covariance=base_cov,
    )
