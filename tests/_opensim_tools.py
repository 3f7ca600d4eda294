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
