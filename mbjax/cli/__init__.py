"""The ``mbjax`` command.

``mbjax moment-arms MODEL --vary COORD=START:STOP:STEP [--vary ...] [--set COORD=VALUE ...]
[--random N] [--wrt COORD ...] [--muscles NAME ...] [--degrees] [--ignore-wrapping]
[--wrapping opensim|smooth] [--allow-out-of-range] [--max-poses N] [--chunk-size N]
[--distributed [--coordinator HOST:PORT --num-processes P --process-id I]] --out FILE.csv [--plot FILE.png]``

``mbjax ik|id|so|jr SETUP.xml [--model MODEL] [--out PATH] [--plot FILE.png] [--quiet]`` runs an OpenSim
tool setup file (the files the OpenSim GUI runs): ``ik`` an ``InverseKinematicsTool`` (writes its
``output_motion_file``, coordinates in degrees), ``id`` an ``InverseDynamicsTool`` (writes
``results_directory/output_gen_force_file``), ``so`` an ``AnalyzeTool`` with a ``StaticOptimization``
(writes ``<name>_StaticOptimization_activation.sto``, ``_force.sto`` and ``_controls.xml``, OpenSim's
``ControlSet`` of the activations, in ``results_directory``),
``jr`` an ``AnalyzeTool`` with a ``JointReaction`` and its ``forces_file`` (writes
``<name>_<analysis>_ReactionLoads.sto`` in ``results_directory``).
``--model`` replaces the setup's ``<model_file>`` (a path or a shipped name), ``--out`` the output
file (ik, id) or folder (so, jr); ``--plot`` draws the result over time.

``mbjax run SETUP.xml [SETUP.xml ...]`` runs several such files in order in one process (a trial's
IK → ID → SO → JR): each model file is read once and each program compiled once, and every file is
checked before the first runs (:func:`run_setups`, also the Python entry point).

``mbjax info MODEL [--json]`` lists the coordinates (joint, type, range with units, default),
bodies, muscles and wrap objects that the ``.osim`` file declares (read from its XML).

``MODEL`` is an OpenSim ``.osim`` file, a shipped example by name (``arm26``, ``gait2392``, ...: ``mbjax.models.EXAMPLES``) or a built-in model
(``shoulder``, ``shoulder:degroot_brand``).  Several ``--vary`` make a grid (``STOP`` included when
it falls on the grid); ``--random N`` draws N poses uniformly in the coordinate ranges instead
(not with ``--vary``).
Unset coordinates sit at the model's default pose.  ``--degrees`` makes the values of *rotational*
coordinates degrees (translational ones stay metres) and writes them in degrees to the CSV.

Checks before any work: every value parses and is finite (the error names the flag), no
coordinate is given twice, ``--out`` / ``--plot`` can be written, a value outside a coordinate's
``<range>`` in the file warns and one beyond it by more than the range's width is refused
(``--allow-out-of-range`` allows it; this catches a forgotten ``--degrees``), and the sweep's host
memory is estimated before allocating (``--max-poses``).

The sweep (:func:`mbjax.analysis.sweep.sweep_poses`) runs in chunks with a progress bar and is sharded over
all local JAX devices (``XLA_FLAGS=--xla_force_host_platform_device_count=4`` makes 4 CPU devices).
With ``--distributed`` (or ``MBJAX_COORDINATOR``/``MBJAX_NUM_PROCESSES``/``MBJAX_PROCESS_ID``, see
:func:`mbjax.analysis.sweep.initialize`) it runs as several processes of one ``jax.distributed`` job; process
0 writes the CSV and the plot.  The CSV holds the coordinates (``NAME (deg|rad|m)``), the lengths
``L[muscle] (m)`` and the moment arms ``R[muscle,coord] (m)`` (per rad; dimensionless ``(m/m)`` for a
translational coordinate; OpenSim's sign R = -∂L/∂q).

Exit status: 0 success, 2 usage error (the command line is wrong: a bad flag or value, an unknown
coordinate or muscle, an unwritable output path, a model that needs ``--ignore-wrapping``, a sweep
too far outside a range or too large), 1 failure (the model file cannot be read, writing the
results fails, anything else goes wrong), 130 interrupted.  Errors are one line on stderr;
``MBJAX_TRACEBACK=1`` adds the Python traceback of an unexpected error.
"""

from .common import (  # noqa: F401
    BUILTIN,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Failure,
    UsageError,
    _library_message,
    default_pose,
    load_model,
)
from .info_command import info_command  # noqa: F401
from .main import build_parser, main  # noqa: F401
from .moment_arms_sweep import curve_styles, lengths_and_moment_arms, moment_arms_command, sweep  # noqa: F401
from .tools import id_command, ik_command, jr_command, run_command, run_setups, so_command, tools_of_setup  # noqa: F401
