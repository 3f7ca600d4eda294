"""Array-in, array-out solvers on top of the core: inverse kinematics from markers (:mod:`mbjax.analysis.ik`).

They take arrays and a model and return arrays; reading and writing OpenSim's files is
:mod:`mbjax.opensim`'s (``mbjax.opensim.tools``: thin adapters from setup files to these solvers).
"""
