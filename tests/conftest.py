"""Shared test setup: float64 everywhere (accuracy claims are made in float64)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import jax

jax.config.update("jax_enable_x64", True)
