"""Inverse kinematics from markers, all frames at once (OpenSim's ``InverseKinematicsTool`` problem).

Per frame ``k`` the coordinates minimise OpenSim's IK objective (``InverseKinematicsSolver``)::

    Σ_m w_m |⁰r_m(q) - x_m(t_k)|² / Σ_m w_m  +  Σ_c w_c (q_c - q_c^ref(t_k))²

over the model's free coordinates, a weighted nonlinear least-squares problem solved by
Levenberg-Marquardt.  The marker term is a weighted *mean* (sums over the markers
present in the frame), as Simbody's ``Assembler`` ``Markers`` goal computes it; coordinate-task
terms are not normalised.  (Measured on OpenSim 4.6's Gait2354 IK setup: the marker gradient at
its solution balances the coordinate tasks with weight 1000 · Σ w_m = 92100, not 1000.)  With
marker tasks only, the normalisation does not move the solution.  The Jacobian is closed-form
(:func:`mbjax.markers.marker_positions_and_jacobian`: one kinematics pass per evaluation, not a
forward-mode sweep over the coordinates).

``method="scan"`` (default, ``lax.scan`` over frames): frame 0 is solved from ``q0`` (default: the
model's default pose, as OpenSim's first ``assemble``), each later frame from the line through the
two previous solutions (OpenSim's ``track`` starts from the last one; both converge to the same
pose, the extrapolated start is closer on a smooth motion: 432 instead of 472 steps on Gait2354),
by a Levenberg-Marquardt written out on the normal equations
(:func:`_solve_tracking`: a kinematics pass and a 23 x 23 Cholesky per step, with a secant
(Dennis-Gay-Welsch) model of the curvature Gauss-Newton leaves out, carried from frame to frame:
about 6 steps per Gait2354 frame); a frame it does not solve is solved again by ``optimistix.LevenbergMarquardt`` from the
same start.  (An earlier design, optimistix for frame 0 and Gauss-Newton with ``jacfwd`` Jacobians for
the others, took many more steps to the same solutions: ``benchmarks/RESULTS.md``.)
``method="vmap"``: every frame in parallel from its own start ``q0 (T, nq)`` (a previous or coarser
solution: the batched polish on an accelerator) by ``optimistix.LevenbergMarquardt``.  Each
frame is solved to the same tolerance either way, and both take one compilation per marker count:
weights, bounds, locks and tasks are traced arrays.

Long trials are cut into chunks of ``chunk`` frames (the last chunk padded, so one compilation), a
chunk warm-started from the previous one; a shorter trial is padded to the next quarter octave
(``mbjax._batching.padded_length``), so trials of similar lengths share one program; ``progress``
prints one line per chunk.

* **Missing markers** (NaN in the data) have weight 0 in that frame, as in OpenSim; their error is NaN.
* **Bounds**: OpenSim restricts only ``clamped`` coordinates to their range (``AssemblySolver::
  setupGoals``, ``Assembler::restrictQ``); ``bounds="clamped"`` does the same, ``"all"`` bounds every
  coordinate by its range, ``None`` none.  A bounded coordinate is reparametrised smoothly
  (MINUIT's transform) ``q = mid + half·sin(u)``, ``mid, half`` the range's centre and half width, so
  every iterate lies in the range and a solution on a bound is reached exactly (``sin u = ±1``).
  ``sin u = ±1`` is a stationary point of the transform, so a frame never starts there: its start
  ``u = arcsin((q0 - mid)/half)`` has ``q0`` clipped to the range shrunk by 1e-6 half widths, and
  the next frame can leave a bound the motion leaves.
* **Locked coordinates**: those locked in the ``.osim`` are not coordinates of the mbjax model (held
  at their default by :func:`mbjax.io.load_osim`); ``locked`` holds more (by name at their default,
  or ``{name: value}``).  Coordinate tasks on locked coordinates are dropped, as in OpenSim.
* **Weights**: ``weights`` maps marker name to weight (``None``: every marker in both the model and
  the data, weight 1); only markers named there are tracked, as OpenSim tracks only markers with an
  applied ``IKMarkerTask``.  ``coordinate_tasks`` maps coordinate name to a weight (track the default
  value) or a :class:`CoordinateTask` (``default_value``, ``manual_value`` in internal units
  (radians / metres) as OpenSim passes ``IKCoordinateTask::getValue`` unconverted, or
  ``from_file``: the ``coordinate_data`` table's natural quintic interpolating spline at the marker
  times, OpenSim's ``GCVSplineSet(5, ...)`` with error variance 0 (6 rows or more)).
  :func:`mbjax.opensim.read_ik_setup` reads both from an OpenSim IK setup XML
  (:mod:`mbjax.opensim.tools.ik`: the setup file, the files the tool writes).

Errors reported per frame are OpenSim's: marker distance ``|⁰r_m - x_m|``, their RMS and the
maximum.  The RMS divides by every tracked marker (OpenSim's ``getNumMarkersInUse``, weight 0
included), a marker missing in the frame adding 0 to the sum, as OpenSim's IK tool computes it.
"""

from .coordinate_tasks import CoordinateTask
from .frame_solver import undetermined_coordinates
from .solve import IKResult, inverse_kinematics

__all__ = ["CoordinateTask", "IKResult", "inverse_kinematics", "undetermined_coordinates"]
