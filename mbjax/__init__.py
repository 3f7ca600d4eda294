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

from .fast_compiles import faster_compiles as _faster_compiles

# XLA:CPU's elemental emitters (faster compiles), set before JAX's backends start
# (mbjax/fast_compiles.py; MBJAX_XLA_DEFAULTS=1 keeps XLA's defaults)
_faster_compiles()

#: public name -> (submodule, attribute or None for the submodule itself), grouped as documented
_EXPORTS: dict[str, tuple[str, str | None]] = {}

#: names that moved to a tier, kept here for one release with a DeprecationWarning: name -> tier
_MOVED: dict[str, str] = {}

#: former submodules kept for one release as ``mbjax.<name>`` with a DeprecationWarning: name -> new homes
#: (``mbjax.ik`` was both the solver and OpenSim's setup file: its names are those of the two)
_MOVED_MODULES: dict[str, tuple[str, ...]] = {
    'ik': ('analysis.ik', 'opensim.tools.ik'),
    'id_tool': ('opensim.tools.id',),
    'so_tool': ('opensim.tools.so',),
    'jr_tool': ('opensim.tools.jr',),
    # the solvers that moved to mbjax.analysis also keep a shim at their old path (mbjax/_moved_modules.py),
    # so that ``import mbjax.sharing`` and ``from mbjax.sharing.qp import ...`` work too
    'sharing': ('analysis.sharing',),
    'identify': ('analysis.identify',),
    'control': ('analysis.control',),
    'sweep': ('analysis.sweep',),
}

#: the former modules with a shim at their old path
_SHIMMED = frozenset({'sharing', 'identify', 'control', 'sweep'})


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
_submodules('reactions')
_export('reactions', 'JointReactions', 'ReactionSpec', 'joint_reactions', 'reaction_spec')

# muscles: paths, moment arms, Hill-type forces; paths as functions of the coordinates (OpenSim's
# FunctionBasedPath); muscle-driven forward simulation
_submodules('muscles', 'wrapping')
_export('muscles', 'moment_arms', 'muscle_lengths', 'activation_derivative', 'muscle_forces', 'muscle_state',
        'equilibrium_fiber_length')
_export('muscles.path_fitting', 'PathTolerance', 'fit_path_functions')
_export('muscles.path_functions', 'with_path_functions')
_export('_simulate_muscles', 'simulate_muscles', 'MuscleSimState', 'muscle_vector_field', 'initial_fiber_lengths')
_export('_excitations', 'ConstantExcitation', 'PiecewiseLinearExcitation')

# force elements (OpenSim's CoordinateLimitForce, SpringGeneralizedForce, ExpressionBasedCoordinateForce,
# PointToPointSpring, BushingForce, HuntCrossleyForce, PathSpring, Ligament) in model.forces; ligaments
_submodules('forces', 'ligaments')

# solvers (mbjax.analysis): muscle force sharing (static optimization, optax; mbjax.analysis.sharing),
# computed-torque tracking (Ehsani Eq. 200-201; .control), parameter identification (.identify), sweeps
# over many poses (.sweep), inverse kinematics (.ik)
_submodules('analysis')
_export('analysis.sharing', 'static_optimization', 'static_optimization_trajectory')
_export('analysis.sweep', 'sweep_poses')

# data: model import and OpenSim data files, model markers, inverse kinematics (mbjax.analysis) and dynamics
# of frames
_submodules('io')
_export('markers', 'Markers', 'marker_positions')
_export('analysis.ik', 'inverse_kinematics')
_export('opensim.tools.id', 'inverse_dynamics_frames')

# the tiers beside the core: OpenSim's workflow, reference twins (test oracles), process settings
_submodules('opensim', 'reference', 'config')

_moved('opensim', 'opensim.tools.ik', 'inverse_kinematics_from_setup')
_moved('opensim', 'opensim.tools.id', 'inverse_dynamics_from_setup', 'inverse_dynamics_motion')
_moved('opensim', 'opensim.tools.so', 'static_optimization_from_setup', 'static_optimization_motion')
_moved('opensim', 'opensim.tools.jr', 'joint_reactions_from_setup')
_moved('reference', '_dynamics', 'mass_matrix_kron', 'bias_forces_kron')
_moved('reference', 'reference', 'gravity_forces_kron', 'pose_derivatives_kron')
_moved('reference', '_point_kinematics', 'virtual_displacement')
_moved('reference', 'reactions', 'joint_reactions_classical')
_moved('config', '_checks', 'checks', 'checks_enabled', 'set_checks')
_moved('config', 'compilation_cache', 'enable_compilation_cache')
_moved('config', 'cpu_threads', 'single_threaded_matmuls')
_moved('muscles', 'muscles', 'moment_arms_batched')
_moved('analysis.sharing', 'analysis.sharing', 'infeasibility_report')
_moved('forces', 'forces', 'ModelForces', 'model_forces', 'with_force_elements')

__all__ = sorted(n for n in _EXPORTS if n not in _MOVED)


def _moved_module(name: str):
    """``mbjax.ik``, ``mbjax.id_tool``, ...: the module at its new home (for ``ik``, a module holding the
    public names of its two new homes), with a warning naming them.  Not cached: warns each time.
    ``mbjax.sharing``, ...: the shim at the old path, imported (it warns once, as its import does)."""
    import types
    import warnings

    from ._moved_modules import moved_message

    if name in _SHIMMED:
        return importlib.import_module(f"{__name__}.{name}")  # the import binds mbjax.<name>
    homes = _MOVED_MODULES[name]
    warnings.warn(moved_message(f"mbjax.{name}", tuple(f"mbjax.{h}" for h in homes)), DeprecationWarning,
                  stacklevel=3)
    modules = [importlib.import_module(f"{__name__}.{home}") for home in homes]
    if len(modules) == 1:
        return modules[0]
    merged = types.ModuleType(f"{__name__}.{name}", f"mbjax.{name} (deprecated): the names of "
                              + ", ".join(m.__name__ for m in modules))
    for m in modules:
        merged.__dict__.update({n: getattr(m, n) for n in m.__all__})
    merged.__all__ = sorted(n for m in modules for n in m.__all__)
    return merged


def __getattr__(name: str):
    if name in _MOVED_MODULES:
        return _moved_module(name)
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


def __dir__():  # the public names and the private ones, not this module's own imports
    return sorted(set(__all__) | {n for n in globals() if n.startswith("_")})
