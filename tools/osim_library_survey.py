"""Try ``load_osim`` on every ``.osim`` file of OpenSim's model library and print one line each.

Usage::

    python tools/osim_library_survey.py DIR          # DIR holds Models/**.osim (a checkout of
                                                      # opensim-org/opensim-models, or an extract)
    python tools/osim_library_survey.py DIR --markdown
    python tools/osim_library_survey.py DIR --opt-out  # with LIBRARY_OPT_OUTS (the elements mbjax
                                                        # does not model, left out explicitly)

Each line is ``OK`` (with the number of bodies, coordinates and paths), or the exception's class
and first line.  Warnings are counted, not printed.  Nothing is opted out (no ``ignore_*``).
"""

from __future__ import annotations

import argparse
import glob
import os
import warnings

#: The explicit opt-outs the library needs: none since every model loads as written (the
#: deprecated Schutte muscles are modelled, point-on-line constraints eliminated).  Kept for
#: libraries of other versions: e.g. ``dict(ignore_forces=("ElasticFoundationForce",))``.
LIBRARY_OPT_OUTS: dict = {}


def survey(root: str, **kwargs):
    from mbjax.opensim.model.osim import load_osim

    files = sorted(glob.glob(os.path.join(root, "Models", "**", "*.osim"), recursive=True))
    rows = []
    for f in files:
        rel = os.path.relpath(f, root)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                m = load_osim(f, **kwargs)
                status = (f"OK  nb={m.n_bodies} nq={m.n_coordinates} paths={len(m.muscle_names)}"
                          + (f" warnings={len(w)}" if w else ""))
                ok = True
            except Exception as e:  # noqa: BLE001 - a survey reports every failure
                msg = str(e).splitlines()[0]
                msg = msg.replace(f, rel) if f in msg else msg
                status = f"{type(e).__name__}: {msg}"
                ok = False
        rows.append((rel, ok, status))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="folder holding Models/")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--opt-out", action="store_true", help="load with LIBRARY_OPT_OUTS")
    args = ap.parse_args()
    rows = survey(args.root, **(LIBRARY_OPT_OUTS if args.opt_out else {}))
    if args.markdown:
        print("| file | result |\n| --- | --- |")
    for rel, ok, status in rows:
        print(f"| {rel} | {status} |" if args.markdown else f"{rel}: {status}")
    print(f"{sum(ok for _, ok, _ in rows)} of {len(rows)} load")


if __name__ == "__main__":
    main()
