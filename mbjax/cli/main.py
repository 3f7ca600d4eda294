"""The ``mbjax`` argument parser and entry point: each command's parser, and the exit status of
each kind of error (the package docstring's table)."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings

from .common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Failure,
    UsageError,
    _EXAMPLES,
    _library_message,
    _positive_int,
    _positive_number,
    _version,
    show_warnings_once,
)
from .moment_arms_sweep import moment_arms_command
from .info_command import info_command
from .tools import id_command, ik_command, jr_command, run_command, so_command


EPILOG = """exit status:
  0    success
  1    failure: a model, setup or data file that cannot be read or run (missing, malformed, a
       setup of another tool, a bad value or name in it: named with its file and line), results
       that cannot be written, an unexpected error
  2    usage error: a bad flag or value on the command line (named in the message), an unknown
       coordinate or muscle given to a flag, an output path that cannot be written, a model that
       needs --ignore-wrapping, a sweep far outside a coordinate's range or larger than --max-poses
  130  interrupted (Ctrl-C)
Errors are one line on stderr; MBJAX_TRACEBACK=1 adds the traceback of an unexpected error."""


def build_parser():
    p = argparse.ArgumentParser(prog="mbjax", description="mbjax: empirical multibody musculoskeletal models in JAX",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"mbjax {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{moment-arms,info,ik,id,so,jr,run}")
    model_help = f"an .osim file, a shipped example ({', '.join(_EXAMPLES)}), 'shoulder' or 'shoulder:degroot_brand'"

    ma = sub.add_parser("moment-arms", help="sweep muscle lengths and moment arms of a model", epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ma.add_argument("model", help=model_help)
    ma.add_argument("--vary", action="append", metavar="COORD=START:STOP:STEP",
                    help="sweep a coordinate (STOP included when on the grid); several make a grid")
    ma.add_argument("--set", action="append", metavar="COORD=VALUE", help="hold a coordinate (default: the model's default)")
    ma.add_argument("--random", type=_positive_int, metavar="N", help="N random poses in the coordinate ranges")
    ma.add_argument("--seed", type=int, default=0)
    ma.add_argument("--wrt", nargs="+", metavar="COORD", help="coordinates of the moment arms (default: varied)")
    ma.add_argument("--muscles", nargs="+", metavar="NAME")
    ma.add_argument("--degrees", action="store_true",
                    help="values of rotational coordinates are degrees (in --vary/--set and in the CSV)")
    ma.add_argument("--ignore-wrapping", action="store_true", help="load wrapping paths as straight lines")
    ma.add_argument("--wrapping", choices=("opensim", "smooth"), default="opensim",
                    help="wrap paths by OpenSim's algorithm (default) or the smooth geodesic option "
                         "(cylinders, spheres, ellipsoids; tori refused)")
    ma.add_argument("--allow-out-of-range", action="store_true",
                    help="sweep beyond a coordinate's range by more than its width (otherwise refused)")
    ma.add_argument("--max-poses", type=_positive_int, metavar="N",
                    help="refuse larger sweeps (default: as many as fit in half the physical memory)")
    ma.add_argument("--quiet", action="store_true", help="no progress bar")
    ma.add_argument("--chunk-size", type=_positive_int, metavar="N",
                    help="poses per step and process (default: 4096 per CPU device, 65536 per GPU)")
    dist = ma.add_argument_group(
        "distributed", "run as one of several processes (hosts, GPUs) under jax.distributed; the poses are split "
        "between the processes and process 0 writes the files. Also enabled by MBJAX_COORDINATOR, "
        "MBJAX_NUM_PROCESSES, MBJAX_PROCESS_ID; under SLURM (srun) or Open MPI --distributed alone is enough")
    dist.add_argument("--distributed", action="store_true",
                      help="call jax.distributed.initialize (via mbjax.analysis.sweep.initialize)")
    dist.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0 (implies --distributed)")
    dist.add_argument("--num-processes", type=_positive_int, metavar="P", help="number of processes (implies --distributed)")
    dist.add_argument("--process-id", type=int, metavar="I", help="this process, 0..P-1 (implies --distributed)")
    ma.add_argument("--out", required=True, metavar="FILE.csv")
    ma.add_argument("--plot", metavar="FILE.png")
    ma.set_defaults(func=moment_arms_command)

    info = sub.add_parser("info", help="list a model's coordinates (ranges, units), bodies, muscles, wrap objects",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("model", help=model_help)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(func=info_command)

    for name, fn, what, out_help in (
            ("ik", ik_command, "inverse kinematics from an OpenSim InverseKinematicsTool setup file",
             "motion file to write (default: the setup's <output_motion_file>)"),
            ("id", id_command, "inverse dynamics from an OpenSim InverseDynamicsTool setup file",
             "generalized-force .sto to write (default: results_directory/output_gen_force_file)"),
            ("so", so_command, "static optimization from an OpenSim AnalyzeTool (StaticOptimization) setup file",
             "folder for the activation and force .sto files and the controls .xml (default: the setup's "
             "results_directory)"),
            ("jr", jr_command, "joint reaction loads from an OpenSim AnalyzeTool (JointReaction) setup file with a "
             "forces_file", "folder for the ReactionLoads .sto file (default: the setup's results_directory)")):
        tool = sub.add_parser(name, help=what, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        tool.add_argument("setup", metavar="SETUP.xml", help="the OpenSim setup file")
        tool.add_argument("--model", help="use this model instead of the setup's <model_file> (" + model_help + ")")
        tool.add_argument("--out", help=out_help)
        tool.add_argument("--plot", metavar="FILE.png", help="plot the result over time")
        tool.add_argument("--quiet", action="store_true", help="no progress output")
        tool.add_argument("--no-compile-cache", action="store_true",
                          help="do not keep compiled programs on disk between runs (default: kept in "
                               "$MBJAX_CACHE_DIR or ~/.cache/mbjax/xla, so a second run skips XLA compilation)")
        if name == "ik":
            tool.add_argument("--accuracy", type=_positive_number, default=None,
                              help="solver tolerance (default: the setup's <accuracy>, not below 1e-9)")
        tool.set_defaults(func=fn)
    run = sub.add_parser("run", help="run several OpenSim setup files in order in one process (IK, ID, SO, JR as "
                         "each file asks; a setup reading the previous one's output chains)", epilog=EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("setups", nargs="+", metavar="SETUP.xml", help="OpenSim setup files, run in this order")
    run.add_argument("--model", help="use this model for every setup instead of their <model_file> (" + model_help + ")")
    run.add_argument("--quiet", action="store_true", help="no progress output")
    run.add_argument("--no-compile-cache", action="store_true",
                     help="do not keep compiled programs on disk between runs")
    run.set_defaults(func=run_command)
    return p


def main(argv=None) -> int:
    """Run the command; returns the exit status (argparse's own usage errors exit 2 directly)."""
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if given and given[0].startswith("-") and given[0] not in ("-h", "--help", "--version"):
        parser.error(f"unrecognized option {given[0]!r} before the command; the command comes first "
                     "(moment-arms, info, ik, id, so, jr, run)")  # argparse would only say a command is required
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():  # each warning once, without the library's source lines
            warnings.simplefilter("always")
            warnings.showwarning = show_warnings_once()
            return args.func(args)
    except UsageError as e:
        print(f"mbjax: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        from ..io.output_paths import OutputPathError  # an output the setup names, found unwritable before the work

        if not isinstance(e, OutputPathError):
            text, _ = _library_message(e)
            print(f"mbjax: error: {text}", file=sys.stderr)
            return EXIT_FAILURE
        print(f"mbjax: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("mbjax: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (Failure, OSError, ValueError, NotImplementedError) as e:
        text, _ = _library_message(e)
        print(f"mbjax: error: {text}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as e:  # a bug or an exhausted resource: one line, the traceback on request
        if os.environ.get("MBJAX_TRACEBACK"):
            traceback.print_exc()
        print(f"mbjax: error: unexpected {type(e).__name__}: {e} (set MBJAX_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return EXIT_FAILURE


