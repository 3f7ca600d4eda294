"""Inverse dynamics of recorded motion with external loads, as OpenSim 4.6's ``InverseDynamicsTool``.

OpenSim's tool, step by step (``InverseDynamicsTool::run``), and what this package does for each:

1. The coordinates file is read as a ``Storage``.  With ``lowpass_cutoff_frequency_for_coordinates``
   ``>= 0`` it is padded by half its length (odd reflection), resampled at its smallest time step
   when the times are not uniform to machine epsilon (degree-5 spline, steps accumulated), and
   filtered forward and backward by a 3rd-order Butterworth IIR (:mod:`mbjax.io.signal`).
   Rotational columns are then converted from degrees.
2. Every column gets a degree-5 ``GCVSpline`` with error variance 0: the natural quintic
   interpolating spline.  ``q``, ``q̇``, ``q̈`` are its value and first two derivatives.  A model
   coordinate without a column (exact name) is held at its default value.
3. Frames: the rows of that (padded, resampled) table from the last row at or before
   ``max(first time, t0)`` to the last row at or before ``min(last time, t1)``
   (``Storage::findIndex``).  With filtering the reported times are the resampled grid's.  A finite
   ``t0``/``t1`` past the file's own times is clipped to them with a warning (OpenSim clips to the
   padded table's and reports frames of the padding); an infinite one (no ``<time_range>``) is the
   file's first or last time, with a warning when the file is filtered (where OpenSim reports the
   padding's frames too).
4. External loads (:mod:`mbjax.opensim.external_loads`) are evaluated at those times; forces excluded
   by ``forces_to_exclude`` are left out; the generalized forces are the residual
   ``τ = M q̈ + N q̇ - G - Q_ext - Q_forces`` (``calcResidualForceIgnoringConstraints``).
5. The ``.sto`` is written with its columns in OpenSim 4.6's multibody tree order
   (``Model::getCoordinatesInMultibodyTreeOrder``, the order of Simbody's speeds:
   :func:`mbjax.opensim.model.osim_motion.tree_order`), not in the ``CoordinateSet`` order of the
   file and of its IK ``.mot`` (Gait2354: both hips, then the lumbar joint, then the knees).
   :class:`IDResult`'s arrays stay in the model's coordinate order; :meth:`IDResult.table`, what is
   written, follows OpenSim's (``IDResult.columns``).

The dynamics runs in JAX: one compiled, ``vmap``-ed program for all frames
(:func:`inverse_dynamics_frames`, chunks of ``chunk`` frames padded to one shape).

Differences from OpenSim: mbjax's coordinates are the *independent* ones.  OpenSim reports a
residual for every coordinate, ignoring constraints; for a locked coordinate (not in mbjax's ``q``)
none is reported here, and a coupled coordinate's residual is folded into its independent one
(virtual work through the coupler).  Muscle forces are not computed: muscles must be excluded
(``Muscles``, ``All``, or by name), as OpenSim's ID setups do.  ``PathSpring`` and ``Ligament`` are
force elements (``model.forces``, ``Q = R T``): subtracted with the others, as OpenSim subtracts
every force it does not exclude.  Individual force elements cannot be excluded by name (``All``
excludes them all).  ``All`` does not
remove the external loads (measured in OpenSim 4.6, whatever the property's comment says).
"""

from ...._batching import padded_length
from .motion import (ACTUATOR_CLASSES, MUSCLE_CLASSES, IDResult, check_frames, coordinate_trajectory, disabled_paths,
                     dynamics_model, inverse_dynamics_frames, inverse_dynamics_motion, torques_of_frames, tree_columns,
                     warn_float32)
from .setup import IDSetup, check_input_file, inverse_dynamics_from_setup, read_coordinates, read_id_setup

__all__ = ["ACTUATOR_CLASSES", "MUSCLE_CLASSES", "IDResult", "IDSetup", "check_frames", "check_input_file",
           "coordinate_trajectory", "disabled_paths", "dynamics_model", "inverse_dynamics_frames",
           "inverse_dynamics_from_setup", "inverse_dynamics_motion", "padded_length", "read_coordinates",
           "read_id_setup", "torques_of_frames", "tree_columns", "warn_float32"]
