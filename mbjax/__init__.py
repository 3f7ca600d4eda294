"""mbjax: empirically-based multibody dynamics of musculoskeletal models in JAX.

The public names below are imported on first use (PEP 562), so ``import mbjax`` and the command
line's ``--help``/``--version`` do not import JAX; ``mbjax.<name>`` and ``from mbjax import <name>``
work as for eager imports.

The core (``mbjax.<name>``) is grouped by layer: models and maps, kinematics, dynamics and loads,
joint reactions, muscles and force elements, the solvers on top of them, and data.  Beside it, three
tiers: ``mbjax.opensim`` (OpenSim's files and tools run from setup files), ``mbjax.reference``
(the literal twins the tests compare the core with) and ``mbjax.config`` (process settings).
"""

from __future__ import annotations

import importlib

#: public name -> (submodule, attribute or None for the submodule itself), grouped as documented
_EXPORTS: dict[str, tuple[str, str | None]] = {}

#: names that moved to a tier, kept here for one release with a DeprecationWarning: name -> tier
_MOVED: dict[str, str] = {}

#: submodules importable as ``mbjax.<name>`` (no warning) that are not public: a tier's implementation
_IMPLEMENTATION = ('ik', 'id_tool', 'so_tool')


def _export(module: str, *names: str) -> None:
    for name in names:
        _EXPORTS[name] = (module, name)


def _submodules(*names: str) -> None:
    for name in names:
        _EXPORTS[name] = (name, None)


def _moved(tier: str, module: str, *names: str) -> None:
    """Names of ``module`` whose home is now ``mbjax.<tier>``: the top-level name warns."""
    _export(module, *names)
    _MOVED.update(dict.fromkeys(names, tier))


# models, joint maps and their ranges
_submodules('maps', 'constraints', 'models')
_export('_model', 'GROUND', 'Model')
_export('_builder', 'ModelBuilder')
_export('_ranges', 'MapRangeError', 'RangeViolation', 'range_violations')

# kinematics (Ehsani Eq. 38-99)
_export('_kinematics', 'JointValues', 'PoseDerivatives', 'BodyKinematics', 'Kinematics', 'body_jacobians',
        'body_kinematics', 'kinematics', 'body_poses', 'joint_transforms', 'joint_values', 'joint_variables',
        'pose_derivatives')
_export('_point_kinematics', 'point_acceleration', 'point_positions', 'point_velocity')

# dynamics, applied loads and forward simulation
_export('_dynamics', 'mass_matrix', 'bias_forces', 'gravity_forces', 'inverse_dynamics', 'forward_dynamics',
        'kinetic_energy', 'potential_energy', 'total_energy')
_export('_wrenches', 'generalized_forces', 'body_wrench_forces')
_export('_loads', 'ExternalLoads')
_export('_simulate', 'simulate')
_export('discrete_adjoint', 'DiscreteAdjoint')

# joint reactions (Blajer & Czaplicki)
_export('reactions', 'JointReactions', 'ReactionSpec', 'joint_reactions', 'reaction_spec')

# muscles: paths, moment arms, Hill-type forces; paths as functions of the coordinates (OpenSim's
# FunctionBasedPath); muscle-driven forward simulation
_submodules('muscles')
_export('muscles', 'moment_arms', 'muscle_lengths', 'activation_derivative', 'muscle_forces', 'muscle_state',
        'equilibrium_fiber_length')
_export('muscles.path_fitting', 'PathTolerance', 'fit_path_functions')
_export('muscles.path_functions', 'with_path_functions')
_export('_simulate_muscles', 'simulate_muscles', 'MuscleSimState', 'muscle_vector_field', 'initial_fiber_lengths')
_export('_excitations', 'ConstantExcitation', 'PiecewiseLinearExcitation')

# force elements (OpenSim's CoordinateLimitForce, SpringGeneralizedForce, ExpressionBasedCoordinateForce,
# PointToPointSpring, BushingForce) in model.forces; ligaments
_submodules('forces', 'ligaments')

# solvers: muscle force sharing (static optimization, optax), computed-torque tracking (Ehsani Eq.
# 200-201), parameter identification, sweeps over many poses
_submodules('sharing', 'control', 'identify', 'sweep')
_export('sharing', 'static_optimization', 'static_optimization_trajectory')
_export('sweep', 'sweep_poses')

# data: model import and OpenSim data files, model markers, inverse kinematics and dynamics of frames
_submodules('io')
_export('markers', 'Markers', 'marker_positions')
_submodules(*_IMPLEMENTATION)
_export('ik', 'inverse_kinematics')
_export('id_tool', 'inverse_dynamics_frames')

# the tiers beside the core: OpenSim's workflow, reference twins (test oracles), process settings
_submodules('opensim', 'reference', 'config')

_moved('opensim', 'ik', 'inverse_kinematics_from_setup')
_moved('opensim', 'id_tool', 'inverse_dynamics_from_setup', 'inverse_dynamics_motion')
_moved('opensim', 'so_tool', 'static_optimization_from_setup', 'static_optimization_motion')
_moved('opensim', 'jr_tool', 'joint_reactions_from_setup')
_moved('reference', '_dynamics', 'mass_matrix_kron', 'bias_forces_kron')
_moved('reference', 'reference', 'gravity_forces_kron', 'pose_derivatives_kron')
_moved('reference', '_point_kinematics', 'virtual_displacement')
_moved('reference', 'reactions', 'joint_reactions_classical')
_moved('config', '_checks', 'checks', 'checks_enabled', 'set_checks')
_moved('config', 'compilation_cache', 'enable_compilation_cache')
_moved('config', 'cpu_threads', 'single_threaded_matmuls')
_moved('muscles', 'muscles', 'moment_arms_batched')
_moved('sharing', 'sharing', 'infeasibility_report')
_moved('forces', 'forces', 'ModelForces', 'model_forces', 'with_force_elements')

__all__ = sorted(n for n in _EXPORTS if n not in _MOVED and n not in _IMPLEMENTATION)


def __getattr__(name: str):
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'mbjax' has no attribute {name!r}") from None
    if name in _MOVED:
        import warnings

        warnings.warn(f"mbjax.{name} is mbjax.{_MOVED[name]}.{name}; the top-level name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(f"{__name__}.{_MOVED[name]}"), name)  # not cached: warns each time
    mod = importlib.import_module(f"{__name__}.{module}")
    value = mod if attribute is None else getattr(mod, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
