"""``mbjax info``: what an ``.osim`` file declares, read from its XML (no JAX), and what of it
:func:`mbjax.io.load_osim` would refuse, by the checks that need no model (listed, exit 0)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from .common import EXIT_OK, Failure, _osim_path, default_pose, load_model


def info_command(args):
    path = _osim_path(args.model)
    if path is None:  # a built-in model assembled in code: list what the Model knows
        model = load_model(args.model, ignore_wrapping=True)
        info = model.osim
        data = {
            "model": args.model,
            "coordinates": [{"name": n, "unit": "rad",
                             "range": [float(info.lower[i]), float(info.upper[i])] if info is not None else None,
                             "default": float(default_pose(model)[i])}
                            for i, n in enumerate(model.coordinate_names)],
            "bodies": [{"name": b} for b in model.body_names],
            "muscles": [{"name": m} for m in model.muscle_names],
            "wrap_objects": [],
        }
    else:
        from ..opensim.model.osim_summary import summarize_osim

        try:
            s = summarize_osim(path)
        except ValueError as e:
            raise Failure(str(e)) from None
        data = {
            "model": path,
            "name": s.model_name,
            "version": s.version,
            "coordinates": [{"name": c.name, "joint": c.joint, "type": c.motion_type, "unit": c.unit,
                             "range": list(c.range), "default": c.default, "clamped": c.clamped,
                             "locked": c.locked, "coupled_to": list(c.coupled_to) if c.coupled_to else None}
                            for c in s.coordinates],
            "bodies": [{"name": b.name, "mass": b.mass} for b in s.bodies],
            "muscles": [{"name": m.name, "class": m.kind, "wrap_objects": list(m.wrap_objects), "path": m.path}
                        for m in s.muscles],
            "wrap_objects": [{"name": w.name, "class": w.kind, "body": w.body} for w in s.wrap_objects],
        }
        data["refusals"] = list(s.refusals)
        if s.constraints:
            data["constraints"] = [{"name": c.name, "class": c.kind, "enforced": c.enforced, "handling": c.handling}
                                   for c in s.constraints]
    if args.json:
        print(json.dumps(data, indent=1))
        return EXIT_OK
    out = []
    title = data["model"] + (f"  (model {data['name']!r}, OpenSim document version {data['version']})"
                             if "version" in data else "")
    out.append(title)
    cs = data["coordinates"]
    out.append(f"\ncoordinates ({len(cs)}):")
    width = max([len(c["name"]) for c in cs] + [4])
    for c in cs:
        rng = c["range"]
        if rng is None:
            r = "no range"
        elif c["unit"] == "rad":
            r = f"[{rng[0]:.6g}, {rng[1]:.6g}] rad = [{np.rad2deg(rng[0]):.4g}, {np.rad2deg(rng[1]):.4g}] deg"
        else:
            r = f"[{rng[0]:.6g}, {rng[1]:.6g}] {c['unit']}"
        flags = [k for k in ("clamped", "locked") if c.get(k)]
        if c.get("coupled_to"):
            flags.append(f"coupled to {', '.join(c['coupled_to'])}")
        joint = f"  joint {c['joint']}" if "joint" in c else ""
        kind = f" {c['type']}" if "type" in c else ""
        out.append(f"  {c['name']:<{width}} {r}  default {c['default']:.6g} {c['unit']}{kind}{joint}"
                   + (f"  ({'; '.join(flags)})" if flags else ""))
    bs = data["bodies"]
    out.append(f"\nbodies ({len(bs)}):")
    out.extend(f"  {b['name']}" + (f"  {b['mass']:.6g} kg" if "mass" in b else "") for b in bs)
    ms = data["muscles"]
    out.append(f"\nmuscles ({len(ms)}):")
    for m in ms:
        wraps = f"  wraps over {', '.join(m['wrap_objects'])}" if m.get("wrap_objects") else ""
        if m.get("path") == "FunctionBasedPath":
            wraps = "  FunctionBasedPath (a function of the coordinates)"
        out.append(f"  {m['name']}" + (f"  {m['class']}" if "class" in m else "") + wraps)
    ws = data["wrap_objects"]
    out.append(f"\nwrap objects ({len(ws)}):")
    out.extend(f"  {w['name']}  {w['class']} on {w['body']}" for w in ws)
    if data.get("constraints"):
        out.append(f"\nconstraints ({len(data['constraints'])}):")
        out.extend(f"  {c['name']}  {c['class']}: {c['handling']}" for c in data["constraints"])
    if "refusals" in data:
        if data["refusals"]:
            out.append(f"\nload_osim refuses this file ({len(data['refusals'])} problem(s)):")
            out.extend(f"  {r}" for r in data["refusals"])
        out.append("\nchecked: the XML only (no model built); mbjax.io.load_osim(path) makes every check")
    try:
        print("\n".join(out))
    except BrokenPipeError:  # `mbjax info MODEL | head`
        sys.stdout = open(os.devnull, "w")
    return EXIT_OK
