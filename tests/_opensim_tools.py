"""OpenSim's tools run from a setup file in a folder of the test's (the validation tests' shared runner)."""

from __future__ import annotations

import os


def run_analyze_tool(setup, folder) -> None:
    """OpenSim's AnalyzeTool on ``setup``, run in ``folder`` (its opensim.log lands there)."""
    import opensim as osim

    cwd = os.getcwd()
    os.chdir(folder)
    try:
        osim.AnalyzeTool(str(setup)).run()
    finally:
        os.chdir(cwd)


class OpenSimDynamics:
    """OpenSim's mass matrix and velocity terms of a model at states set directly in its Q and U (the
    validation tests that compare mbjax's velocity terms with the Lagrangian of OpenSim's own M)."""

    def __init__(self, model, state):
        import opensim as osim

        self.model, self.state, self.n = model, state, state.getNU()
        self.solver = osim.InverseDynamicsSolver(model)

    def set_state(self, q, u):
        for i in range(self.n):
            self.state.updQ().set(i, float(q[i]))
            self.state.updU().set(i, float(u[i]))

    def mass(self, q):
        """M(q) by ``calcM``."""
        import numpy as np
        import opensim as osim

        self.set_state(q, np.zeros(self.n))
        self.model.realizePosition(self.state)
        M = osim.Matrix()
        self.model.getMatterSubsystem().calcM(self.state, M)
        return np.array([[M.get(i, j) for j in range(self.n)] for i in range(self.n)])

    def velocity_terms(self, q, u):
        """c(q, u): the inverse dynamics at u̇ = 0 (gravity and forces off in the model)."""
        import numpy as np
        import opensim as osim

        self.set_state(q, u)
        self.model.realizeVelocity(self.state)
        tau = self.solver.solve(self.state, osim.Vector(self.n, 0.0))
        return np.array([tau.get(i) for i in range(self.n)])

    def mass_derivatives(self, q, h=1e-6):
        """∂M/∂q_k ``(n, n, n)`` (index k first) by central differences of ``calcM``."""
        import numpy as np

        return np.stack([(self.mass(q + h * e) - self.mass(q - h * e)) / (2 * h) for e in np.eye(self.n)])
