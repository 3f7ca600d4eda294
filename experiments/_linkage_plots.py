"""Figures shared by the linkage experiments (four-bar, five-bar): point p by two routes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def plot_point_kinematics(times, comparison, q_labels, method: str, title: str, path: str) -> None:
    """PNG of the drives and |v_p|, |a_p| by the joint-map model (``method``) vs absolute coordinates.

    ``comparison`` is the ``(q, v_model, a_model, v_abs, a_abs)`` of
    :func:`mbjax.models.linkage_compare.linkage_comparison`.
    """
    q, vm, am, va, aa = comparison
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    for j, label in enumerate(q_labels):
        ax[0].plot(times, q[:, j], label=label)
    if len(q_labels) > 1:
        ax[0].legend(fontsize=8)
    else:
        ax[0].set_ylabel(q_labels[0])
    for a, model_val, abs_val, name in ((ax[1], vm, va, "|v_p|"), (ax[2], am, aa, "|a_p|")):
        a.plot(times, np.linalg.norm(model_val, axis=1), lw=3, label=f"mbjax ({method})")
        a.plot(times, np.linalg.norm(abs_val, axis=1), "k:", lw=2, label="absolute coordinates")
        a.set_ylabel(name)
    for a in ax:
        a.set_xlabel("t")
    ax[2].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
