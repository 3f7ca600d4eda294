"""``import mbjax`` and the command line's ``--help``/``--version`` do not import JAX (names load on
first use), and every public name still resolves to what its submodule defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import mbjax


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_and_cli_parser_do_not_import_jax():
    assert "jax" not in _modules_after("import mbjax")
    assert "jax" not in _modules_after("import mbjax.cli as c; c.build_parser()")
    # `mbjax info` reads the file's XML: neither JAX nor the model loader
    info = _modules_after("import mbjax.cli as c, contextlib, io; "
                          "exec(\"with contextlib.redirect_stdout(io.StringIO()): assert c.main(['info', 'arm26']) == 0\")")
    assert "mbjax.opensim.model.osim_summary" in info and "jax" not in info and "mbjax.opensim.model.osim" not in info
    out = subprocess.run([sys.executable, "-m", "mbjax.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("mbjax ")


def test_every_public_name_is_its_submodules_object():
    import pytest

    for name, (module, attribute) in mbjax._EXPORTS.items():
        mod = importlib.import_module(f"mbjax.{module}")
        expected = mod if attribute is None else getattr(mod, attribute)
        if name in mbjax._MOVED:  # the tiers' names: the same object, with a warning naming the new home
            with pytest.warns(DeprecationWarning, match=rf"mbjax.{name} is mbjax.{mbjax._MOVED[name]}.{name}"):
                tier = importlib.import_module(f"mbjax.{mbjax._MOVED[name]}")  # mbjax.analysis.sharing: dotted
                assert getattr(mbjax, name) is expected is getattr(tier, name)
            assert name not in mbjax.__all__
            continue
        assert getattr(mbjax, name) is expected, name
    assert set(mbjax.__all__) <= set(dir(mbjax))
    for name in mbjax.models.__all__:
        assert getattr(mbjax.models, name) is not None


def test_unknown_names_raise_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mbjax.nope  # noqa: B018
    with pytest.raises(AttributeError, match="mbjax.models' has no attribute 'nope'"):
        mbjax.models.nope  # noqa: B018
