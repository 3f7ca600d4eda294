"""The public API in tiers: a core of at most 60 names beside the subpackages, the tiers
``mbjax.opensim``, ``mbjax.reference`` and ``mbjax.config``, and the names that moved kept at the
top level for one release with a warning naming their new home."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import warnings

import pytest

import mbjax

TIERS = ("opensim", "reference", "config")

#: OpenSim's workflow: its files, the setup readers, the tools from setup files and on tables
OPENSIM_WORKFLOW = (
    "load_osim", "write_osim", "read_storage", "write_storage", "read_trc", "write_trc", "read_external_loads",
    "read_ik_setup", "read_id_setup", "read_so_setup", "read_jr_setup", "read_scale_setup",
    "inverse_kinematics_from_setup", "inverse_dynamics_from_setup", "static_optimization_from_setup",
    "joint_reactions_from_setup", "run_setups",
    "inverse_dynamics_motion", "static_optimization_motion", "joint_reactions_motion",
)


def _is_module(name: str) -> bool:
    return mbjax._EXPORTS[name][1] is None


def test_the_core_has_at_most_60_names():
    names = [n for n in mbjax.__all__ if not _is_module(n)]
    assert len(names) <= 60, f"{len(names)} core names"
    assert set(TIERS) <= set(mbjax.__all__)
    assert not set(mbjax._MOVED) & set(mbjax.__all__)


def test_every_name_of_every_tier_resolves():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in mbjax.__all__:
            assert getattr(mbjax, name) is not None, name
        for tier in TIERS + ("io",):
            module = importlib.import_module(f"mbjax.{tier}")
            for name in module.__all__:
                assert getattr(module, name) is not None, f"mbjax.{tier}.{name}"


@pytest.mark.parametrize("name", sorted(mbjax._MOVED))
def test_a_moved_name_warns_and_is_its_new_homes_object(name):
    tier = mbjax._MOVED[name]
    home = importlib.import_module(f"mbjax.{tier}")
    assert name in getattr(home, "__all__", dir(home)), f"mbjax.{tier} lacks {name}"
    with pytest.warns(DeprecationWarning, match=rf"is mbjax\.{tier}\.{name};"):
        old = getattr(mbjax, name)
    assert old is getattr(home, name)


def test_the_opensim_tier_is_the_workflow():
    import mbjax.opensim as tier

    assert set(OPENSIM_WORKFLOW) <= set(tier.__all__)
    assert tier.load_osim is mbjax.io.load_osim and tier.read_storage is mbjax.io.read_storage
    from mbjax.opensim.tools import ik, jr

    assert tier.inverse_kinematics_from_setup is ik.inverse_kinematics_from_setup
    assert tier.joint_reactions_motion is jr.joint_reactions_motion
    with pytest.raises(AttributeError, match="mbjax.opensim' has no attribute 'nope'"):
        tier.nope  # noqa: B018


@pytest.mark.parametrize("name, homes", [
    ("ik", ("mbjax.analysis.ik", "mbjax.opensim.tools.ik")), ("id_tool", ("mbjax.opensim.tools.id",)),
    ("so_tool", ("mbjax.opensim.tools.so",)), ("jr_tool", ("mbjax.opensim.tools.jr",)),
])
def test_the_former_tool_packages_warn_naming_their_new_homes(name, homes):
    """``mbjax.ik`` (the solver and the IK setup file), ``mbjax.id_tool``, ``mbjax.so_tool`` and
    ``mbjax.jr_tool`` answer for one release, with a warning naming where their names are now."""
    said = re.escape(f"mbjax.{name} is {' and '.join(homes)};")
    with pytest.warns(DeprecationWarning, match=said):
        old = getattr(mbjax, name)
    assert name not in mbjax.__all__
    for home in map(importlib.import_module, homes):
        for n in home.__all__:
            assert getattr(old, n) is getattr(home, n), f"mbjax.{name}.{n}"
    assert not os.path.exists(os.path.join(os.path.dirname(mbjax.__file__), name))  # no package left behind


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_importing_the_package_and_the_opensim_tier_imports_no_jax():
    assert "jax" not in _modules_after("import mbjax")
    assert "jax" not in _modules_after("import mbjax.opensim")


def test_opensim_still_means_opensims_own_package():
    pytest.importorskip("opensim")
    out = subprocess.run([sys.executable, "-c", "import mbjax.opensim, mbjax.opensim.opensim_reference; import opensim; "
                          "print(opensim.__name__, hasattr(opensim, 'Model'))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["opensim", "True"]


#: the solvers that moved to mbjax.analysis: old name -> (a public name, a submodule, a name of the submodule)
MOVED_SOLVERS = {"sharing": ("static_optimization", "qp", "solve"), "identify": ("fit", "selection", "Selection"),
                 "control": ("track", None, None), "sweep": ("sweep_poses", None, None)}


@pytest.fixture
def old_paths_unimported():
    """The old paths as in a fresh process: no ``mbjax.sharing``, ... in sys.modules or on ``mbjax``
    (each old path warns once per process, as any import runs once); put back as they were after."""
    def forget():
        for name in MOVED_SOLVERS:
            vars(mbjax).pop(name, None)
            for key in [k for k in sys.modules if k == f"mbjax.{name}" or k.startswith(f"mbjax.{name}.")]:
                del sys.modules[key]

    saved = {k: v for k, v in sys.modules.items() if k.split(".")[:2][-1] in MOVED_SOLVERS and k.startswith("mbjax.")}
    saved_attrs = {n: vars(mbjax)[n] for n in MOVED_SOLVERS if n in vars(mbjax)}
    forget()
    yield forget
    forget()
    sys.modules.update(saved)
    vars(mbjax).update(saved_attrs)


def _run(code, space):
    exec(compile(code, __file__, "exec"), space)  # as a line of this file


def _one_warning(name, run):
    """``run()`` under a recorder: exactly one DeprecationWarning, naming the new home, at the caller."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = run()
    said = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert [str(w.message) for w in said] == [
        f"mbjax.{name} is mbjax.analysis.{name}; mbjax.{name} goes in the next release"], said
    assert said[0].filename == __file__, said[0].filename  # points at the line that used the old path
    return value


@pytest.mark.parametrize("name", sorted(MOVED_SOLVERS))
def test_the_former_solver_paths_warn_once_and_are_the_new_modules(name, old_paths_unimported):
    """``mbjax.sharing``, ``mbjax.identify``, ``mbjax.control`` and ``mbjax.sweep`` are
    ``mbjax.analysis.*`` now; for one release the old paths, as attributes, imports and their
    submodules, give the same objects with one warning naming the new home."""
    new = importlib.import_module(f"mbjax.analysis.{name}")
    public, sub, sub_public = MOVED_SOLVERS[name]
    assert name not in mbjax.__all__ and name in mbjax.analysis.__all__
    assert getattr(mbjax.analysis, name) is new

    assert _one_warning(name, lambda: getattr(mbjax, name)) is new  # the attribute
    assert getattr(mbjax, name) is new  # bound now: no second warning
    old_paths_unimported()
    space = {}
    _one_warning(name, lambda: _run(f"import mbjax.{name}\nm = mbjax.{name}", space))  # the import statement
    assert space["m"] is new and sys.modules[f"mbjax.{name}"] is new
    old_paths_unimported()
    _one_warning(name, lambda: _run(f"from mbjax.{name} import {public} as f", space))
    assert space["f"] is getattr(new, public)
    old_paths_unimported()
    _one_warning(name, lambda: _run(f"from mbjax import {name} as m", space))
    assert space["m"] is new
    if sub:  # a submodule through the old path: the new submodule, not a second copy
        old_paths_unimported()
        new_sub = importlib.import_module(f"mbjax.analysis.{name}.{sub}")
        _one_warning(name, lambda: _run(f"import mbjax.{name}.{sub} as s", space))
        assert space["s"] is new_sub and sys.modules[f"mbjax.{name}.{sub}"] is new_sub
        old_paths_unimported()
        _one_warning(name, lambda: _run(f"from mbjax.{name}.{sub} import {sub_public} as f", space))
        assert space["f"] is getattr(new_sub, sub_public)
