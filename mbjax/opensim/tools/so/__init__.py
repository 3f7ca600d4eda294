"""Static optimization of recorded motion, as OpenSim 4.6's ``AnalyzeTool`` with a ``StaticOptimization``.

OpenSim's tool, step by step (``AnalyzeTool::loadStatesFromFile``, ``StaticOptimization::record``),
and what this package does for each:

1. The coordinates file is read; with ``lowpass_cutoff_frequency_for_coordinates >= 0`` it is
   padded, resampled and filtered exactly as the ID tool does (:func:`mbjax.io.signal.lowpass_storage`);
   degrees become radians; a coordinate without a column is held at its default.
2. ``SimbodyEngine::formCompleteStorages``: the speeds are the first derivative of the degree-5
   natural spline through the coordinates, at the samples.  Those rows (coordinates and speeds,
   over the padded time grid) are the *states store*.
3. ``StaticOptimization`` fits a second degree-5 spline to the **speed** columns and takes its
   derivative as the target accelerations (not the coordinate spline's second derivative: the two
   differ near the ends and wherever the data are rough).
4. Frames: the states rows from the last at or before ``initial_time`` to the last at or before
   ``final_time`` (``Storage::findIndex``), the reported times the padded grid's (the tutorial's
   reference file starts at -2e-7 s); times past the coordinates' own, infinite ones included, are
   clipped to them as the ID tool's are (OpenSim would report the padding's frames).
5. Per frame, :func:`mbjax.static_optimization` with OpenSim's formulation (its module docstring)
   and OpenSim's unit-force moment arms (:func:`mbjax.muscles.opensim_moment_arms`; over an
   ellipsoid or a path wrapping twice they differ from −∂L/∂q by millimetres): τ = inverse dynamics with the external loads and the model's force elements, muscles at
   ``use_muscle_physiology`` force a·F_o f_L f_V cos α (no passive force), each activation within
   its muscle's ``[min_control, max_control]`` as OpenSim bounds an actuator by its controls
   (``min_control`` raised to ``minimum_activation``; default ``[minimum_activation, 1]``), exponent
   ``activation_exponent``; ``CoordinateActuator`` reserves from ``force_set_files`` (optimal
   force, min/max control) enter as |x|^p terms.  Frames are warm-started in order, and each
   goes straight to the QP's dual Newton polish from the previous frame's multipliers
   (``solver_options`` ``first_outer=0``; the augmented-Lagrangian passes run only for a frame the
   polish does not solve; the same solutions to 4e-10 on Gait2354, about a third less time).
6. Written as OpenSim writes them: ``<name>_StaticOptimization_activation.sto`` and
   ``<name>_StaticOptimization_force.sto`` in ``results_directory`` (columns in OpenSim's order, the
   model's ForceSet order of its muscles and own actuators, then the force-set files' actuators as
   listed: not the multibody tree order of the ID tool; :class:`SOResult` keeps the muscles first and
   :meth:`SOResult.tables` is the files' order; the force file then repeats each external load as OpenSim's
   ``ExternalForce::getRecordValues`` does: ``<applied_to_body>_<name>_Fx Fy Fz`` (ground axes),
   ``_px py pz`` (in the applied body's frame, when the force has a point), ``_Tx Ty Tz`` (ground
   axes, when it has a torque)); and ``<name>_StaticOptimization_controls.xml``, the activations as
   OpenSim's ``ControlSet`` (the controls file of its Forward and CMC tools;
   :mod:`mbjax.opensim.tools.so.controls`).

Differences: OpenSim solves each frame with IPOPT to ``optimizer_convergence_criterion``
(default 1e-4 on its scaled problem); mbjax solves to rounding, so the two agree to OpenSim's
tolerance (tighten it in the setup file to compare closely).  The actuators of ``force_set_files``
read are ``CoordinateActuator`` reserves and the ``PointActuator``/``TorqueActuator`` residuals of
gait analyses (:mod:`mbjax.forces.body_actuators`), with the file's ``<defaults>``; a disabled one
(``isDisabled``/``appliesForce``) is left out as OpenSim leaves it out; any other actuator is
refused by name.  The model's disabled muscles and path actuators (``appliesForce`` false, 3.x
``isDisabled`` true) are left out of the optimization and the results, as OpenSim removes them.
"""

from .actuators import Reserve, actuator_columns, check_actuators, model_actuators
from .controls import controls_text, write_controls
from .motion import SOResult, states_trajectory, static_optimization_motion
from .setup import (SOSetup, read_reserves, read_so_setup, setup_force_sets, static_optimization_from_setup,
                    unused_setup_elements)

__all__ = ["Reserve", "SOResult", "SOSetup", "actuator_columns", "check_actuators", "controls_text", "model_actuators",
           "read_reserves", "read_so_setup", "setup_force_sets", "states_trajectory", "static_optimization_from_setup",
           "static_optimization_motion", "unused_setup_elements", "write_controls"]
