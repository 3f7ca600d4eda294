"""mbjax: empirically-based multibody dynamics of musculoskeletal models in JAX.

The public names below are imported on first use (PEP 562), so ``import mbjax`` and the command
line's ``--help``/``--version`` do not import JAX; ``mbjax.<name>`` and ``from mbjax import <name>``
work as for eager imports.
"""

from __future__ import annotations

import importlib

#: public name -> (submodule, attribute or None for the submodule itself), grouped as documented
_EXPORTS: dict[str, tuple[str, str | None]] = {}


def _export(module: str, *names: str) -> None:
    for name in names:
        _EXPORTS[name] = (module, name)


def _submodules(*names: str) -> None:
    for name in names:
        _EXPORTS[name] = (name, None)


_submodules('maps')
_export('_ranges', 'MapRangeError', 'RangeViolation', 'range_violations')
_export('_checks', 'checks', 'checks_enabled', 'set_checks')
_export('compilation_cache', 'enable_compilation_cache')
_export('cpu_threads', 'single_threaded_matmuls')
_export('_kinematics', 'JointValues', 'PoseDerivatives', 'BodyKinematics', 'Kinematics', 'body_jacobians',
        'body_kinematics', 'kinematics', 'body_poses', 'joint_transforms', 'joint_values',
        'point_acceleration', 'point_positions', 'point_velocity', 'pose_derivatives',
        'pose_derivatives_kron', 'virtual_displacement')
_export('_model', 'GROUND', 'Model')
_export('_builder', 'ModelBuilder')
_export('_wrenches', 'generalized_forces', 'body_wrench_forces')
_export('_dynamics', 'mass_matrix', 'bias_forces', 'gravity_forces', 'inverse_dynamics', 'forward_dynamics', 'mass_matrix_kron', 'bias_forces_kron',
        'gravity_forces_kron', 'kinetic_energy', 'potential_energy', 'total_energy')
_export('_simulate', 'simulate')
_export('discrete_adjoint', 'DiscreteAdjoint')
_export('_kinematics', 'joint_variables')
_submodules('constraints')
_export('_loads', 'ExternalLoads')
_export('reactions', 'JointReactions', 'ReactionSpec', 'joint_reactions', 'joint_reactions_classical',
        'reaction_spec')
_submodules('ligaments', 'muscles')
_export('muscles', 'moment_arms', 'moment_arms_batched', 'muscle_lengths')

# paths as empirical functions of the coordinates (OpenSim's FunctionBasedPath)
_export('muscles.path_fitting', 'PathTolerance', 'fit_path_functions')
_export('muscles.path_functions', 'with_path_functions')
_submodules('io', 'sweep')
_export('sweep', 'sweep_poses')
_submodules('models')
_export('muscles', 'activation_derivative', 'muscle_forces', 'muscle_state', 'equilibrium_fiber_length')

# OpenSim data files (.mot/.sto/.trc), model markers and inverse kinematics
_submodules('ik')
_export('ik', 'inverse_kinematics', 'inverse_kinematics_from_setup')
_export('markers', 'Markers', 'marker_positions')

# inverse dynamics of recorded motion with external loads, OpenSim's ID tool
_submodules('id_tool')
_export('id_tool', 'inverse_dynamics_frames', 'inverse_dynamics_from_setup', 'inverse_dynamics_motion')
_submodules('so_tool')
_export('so_tool', 'static_optimization_from_setup', 'static_optimization_motion')
_export('jr_tool', 'joint_reactions_from_setup')

# muscle-driven forward simulation
_export('_simulate_muscles', 'simulate_muscles', 'MuscleSimState', 'muscle_vector_field',
        'initial_fiber_lengths')
_export('_excitations', 'ConstantExcitation', 'PiecewiseLinearExcitation')

# computed-torque tracking (Ehsani Eq. 200-201)
_submodules('control')

# muscle force sharing (static optimization, optax)
_submodules('sharing')
_export('sharing', 'static_optimization', 'static_optimization_trajectory', 'infeasibility_report')

# force elements (OpenSim's CoordinateLimitForce, SpringGeneralizedForce, ExpressionBasedCoordinateForce,
# PointToPointSpring, BushingForce) in model.extras["forces"]
_submodules('forces')
_export('forces', 'ModelForces', 'model_forces', 'with_force_elements')

# parameter identification: fit, parametrizations, data terms, identifiability
_submodules('identify')


# the tiers beside the core: reference twins (test oracles) and process settings
_submodules('reference', 'config')

#: names that moved to a tier, kept here for one release with a DeprecationWarning
_MOVED = {name: "reference" for name in ('mass_matrix_kron', 'bias_forces_kron', 'gravity_forces_kron',
                                         'pose_derivatives_kron', 'joint_reactions_classical')}
_MOVED.update({name: "config" for name in ('checks', 'checks_enabled', 'set_checks', 'enable_compilation_cache',
                                           'single_threaded_matmuls')})

__all__ = sorted(n for n in _EXPORTS if n not in _MOVED)


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
