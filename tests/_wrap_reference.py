"""A literal, list-based port of OpenSim's ``GeometryPath::applyWrapObjects`` (test oracle).

One muscle, one pose, Python lists and loops exactly as in the C++ (remove this wrap's points,
scan the segments in range, first mandatory wins else the least length change, insert, up to 8
passes with the 0.5 mm rule and the first-pass order swap; straight segments and the segment
choice use each tangent point's ground position cached at the first ``getLocationInGround`` call,
the surfaces the latest tangent points, as OpenSim 4.6 does).  The surfaces are mbjax's own
single-segment functions, so this checks the static-shaped pass of :mod:`mbjax.wrapping.path`
by a second algorithm.
"""

from __future__ import annotations

import numpy as np

from mbjax.wrapping._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED
from mbjax.wrapping.surfaces import SURFACES
from mbjax.wrapping.objects import KINDS



def apply_wrap_objects(points, active, wraps_of_path, start_end, surface_args, frames):
    """Length of one path.

    ``points (P, 3)`` world, ``active (P,)``; ``wraps_of_path``: object ids in PathWrapSet order;
    ``start_end``: 0-based (start, end) per wrap; ``surface_args[o]`` = (kind, dims, axis, sign,
    method); ``frames[o]`` = (R (3,3), origin (3,)).
    """
    n_w = len(wraps_of_path)
    path = [("pt", p, np.asarray(points[p], float)) for p in range(len(points)) if active[p]]
    surf_len = {}
    # Point::getLocationInGround caches a PathWrapPoint's ground position on its first call in a
    # state; PathWrapPoint::setLocation does not invalidate it.  ``ground`` is that cache.
    ground = {}

    def in_ground(e):
        if e[0] == "pt":
            return e[2]
        return ground.setdefault((e[0], e[1]), e[2])

    def where(w):
        for j, e in enumerate(path):
            if e[0] == "w1" and e[1] == w:
                return j
        return None

    def length():  # calcLengthAfterPathComputation: every element's getLocationInGround
        for e in path:
            in_ground(e)
        total = 0.0
        for a, b in zip(path[:-1], path[1:]):
            if a[0] in ("w1", "w2") and b[0] in ("w1", "w2") and wraps_of_path[a[1]] == wraps_of_path[b[1]]:
                total += surf_len.get(b[1], 0.0) if b[0] == "w2" else 0.0
            else:
                total += float(np.linalg.norm(in_ground(a) - in_ground(b)))
        return total

    order = list(range(n_w))
    last = np.inf
    max_it = 1 if n_w < 2 else 8
    result = [0] * n_w
    for kk in range(max_it):
        for i in range(n_w):
            result[i] = 0
            w = order[i]
            o = wraps_of_path[w]
            j = where(w)
            if j is not None:
                del path[j:j + 2]
            s, e = start_end[w]
            act_idx = [p for p in range(s, e + 1) if active[p]]
            if not act_idx:
                return length()
            smp, emp = act_idx[0], act_idx[-1]
            start = next(k for k, x in enumerate(path) if x[0] == "pt" and x[1] == smp)
            end = next(k for k, x in enumerate(path) if x[0] == "pt" and x[1] == emp)
            kind, dims, axis, sign, method = surface_args[o]
            rot, org = frames[o]
            best, min_change = None, np.inf
            for pt1 in range(start, end):
                a, b = path[pt1], path[pt1 + 1]
                if a[0] != "pt" and b[0] != "pt" and wraps_of_path[a[1]] == wraps_of_path[b[1]]:
                    continue
                fn = SURFACES[KINDS.index(kind)]
                res = fn(rot.T @ (a[2] - org), rot.T @ (b[2] - org), np.asarray(dims, float), axis, sign, method,
                         n_w == 1)
                code = int(res.code)
                result[i] = code
                r1 = rot @ np.asarray(res.r1) + org
                r2 = rot @ np.asarray(res.r2) + org
                cand = (pt1, r1, r2, float(res.length), bool(res.has_path))
                if code == MANDATORY:
                    best = cand
                    break
                if code == WRAPPED:
                    ga, gb = in_ground(a), in_ground(b)  # calcPathLengthChange: cached ground positions
                    change = (np.linalg.norm(ga - r1) + res.length + np.linalg.norm(r2 - gb)
                              - np.linalg.norm(ga - gb))
                    if change < min_change:
                        best, min_change = cand, change
            if best is not None and best[4]:
                pt1, r1, r2, ln, _ = best
                path.insert(pt1 + 1, ("w1", w, r1))
                path.insert(pt1 + 2, ("w2", w, r2))
                surf_len[w] = ln
        total = length()
        if abs(total - last) < 0.0005:
            break
        last = total
        if kk == 0 and n_w > 1 and result[0] == NO_WRAP and result[1] == INSIDE:
            order[0], order[1] = 1, 0
            j = where(0)
            if j is not None:
                del path[j:j + 2]
    return length()
