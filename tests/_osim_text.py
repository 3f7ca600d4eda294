"""Small helpers of the tests that edit an ``.osim`` file's text: write it into ``tmp_path``, and
replace a piece of it that must be there."""


def write_text(tmp_path, text, name="model.osim"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def replace_once(text, old, new, count=1):
    """``text`` with ``old`` replaced (``count`` times); ``old`` must occur (a test that edits
    nothing would pass for the wrong reason)."""
    assert old in text, old
    return text.replace(old, new, count)


def line_of(text, fragment):
    """The 1-based line of ``text`` where ``fragment`` first occurs."""
    return text[:text.index(fragment)].count("\n") + 1


def quietly(fn, *args, **kwargs):
    """``fn(...)`` with every warning turned into an error."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


def opensim_refuses(path, realize: bool = False) -> bool:
    """Whether OpenSim 4.6 refuses the file at ``initSystem`` (and at ``realizeDynamics`` with ``realize``),
    its log silenced meanwhile and its level restored after (a test that reads OpenSim's log runs in the
    same process); the calling test is skipped where OpenSim is not installed."""
    import pytest

    opensim = pytest.importorskip("opensim")
    level = opensim.Logger.getLevelString()
    opensim.Logger.setLevelString("off")
    try:
        model = opensim.Model(path)
        state = model.initSystem()
        if realize:
            model.realizeDynamics(state)
    except Exception:
        return True
    finally:
        opensim.Logger.setLevelString(level)
    return False
