"""``mbjax ARGS`` run in-process for the command-line tests."""

from __future__ import annotations

from mbjax import cli


def run_cli(capsys, *args, no_compile_cache: bool = False, traceback_ok: bool = False):
    """``(exit status, stdout, stderr)`` of ``mbjax ARGS``, argparse's own exits included; stderr holds
    no traceback unless ``traceback_ok``.  ``no_compile_cache``: the OpenSim tools run without the
    persistent compilation cache (it would switch JAX's global cache on for the rest of the process)."""
    args = list(args)
    if no_compile_cache and args and args[0] in ("ik", "id", "so", "jr"):
        args.append("--no-compile-cache")
    try:
        rc = cli.main(args)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    if not traceback_ok:
        assert "Traceback" not in err, err
    return rc, out, err
