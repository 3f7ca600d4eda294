"""OpenSim's tools as thin adapters from setup files (and tables already read) to mbjax's solvers:
:mod:`~mbjax.opensim.tools.ik` (``InverseKinematicsTool``, solving with :mod:`mbjax.analysis.ik`),
:mod:`~mbjax.opensim.tools.id` (``InverseDynamicsTool``), :mod:`~mbjax.opensim.tools.so`
(``AnalyzeTool`` with ``StaticOptimization``), :mod:`~mbjax.opensim.tools.jr` (``AnalyzeTool`` with
``JointReaction``).  The public names are :mod:`mbjax.opensim`'s."""
