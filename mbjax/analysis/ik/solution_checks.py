"""What an IK solution tells about its setup: coordinates the tasks leave undetermined, and marker
data whose units do not match the model's size."""

from __future__ import annotations

import warnings

import numpy as np

from ...io.storage import TRC_UNIT_NAMES, TRC_UNITS


#: marker data spread this many times as far as (or this fraction of) the model's markers at the
#: solution is refused: a subject differs from a generic model by far less, a unit by 10-1000 times
_SCALE_LIMIT = 4.0


def _check_marker_scale(data, x, xm, present, default_markers=None):
    """Refuse marker data whose size does not match the model's: the median over frames (with three
    or more markers present) of the data's spread (RMS distance of the markers from their centroid)
    over the model's markers' at the IK solution.  Millimetre data under ``Units m`` gives ~1000
    (the pose cannot stretch the model, so IK returns a pose and a huge error, not an error).  The
    unit the message suggests compares the data with the model's markers at its default pose
    (``default_markers()``, ``(nm, 3)``): at the solution the model is contorted towards the data, so
    that ratio understates a unit's factor."""
    use = present.sum(axis=1) >= 3
    if not use.any():
        return

    def spread(p):
        p = np.where(present[use][..., None], p[use], np.nan)
        c = np.nanmean(p, axis=1, keepdims=True)
        return np.sqrt(np.nanmean(np.sum((p - c) ** 2, axis=-1), axis=1))

    model_spread = spread(xm)
    ok = model_spread > 0
    if not ok.any():
        return
    ratio = float(np.median(spread(x)[ok] / model_spread[ok]))
    if ratio <= 0:  # the markers coincide (all at (0, 0, 0): refused or warned by _check_zero_frames)
        return
    if 1.0 / _SCALE_LIMIT <= ratio <= _SCALE_LIMIT:
        return
    size = ratio
    if default_markers is not None:
        reference = spread(np.broadcast_to(default_markers(), xm.shape))
        if np.all(reference > 0):
            size = float(np.median(spread(x) / reference))
    factor = TRC_UNITS.get(TRC_UNIT_NAMES.get(data.units, data.units), 1.0) / size  # metres per file unit
    guess = min(TRC_UNITS, key=lambda u: abs(np.log(TRC_UNITS[u] / factor)))
    array = min(TRC_UNITS, key=lambda u: abs(np.log(TRC_UNITS[u] * size)))  # the unit of metres-labelled values
    raise ValueError(f"IK: the marker positions spread {ratio:.3g} times as far as the model's markers at the best "
                     f"pose ({size:.3g} times as far as at its default pose): they are not in metres. An array you "
                     f"built: MarkerData.positions must be in metres (they look like {array!r}: multiply them by "
                     f"{TRC_UNITS[array] if array != 'm' else 1 / size:g}); a .trc file read with read_trc: its Units "
                     f"header (Units={data.units!r}) does not match its values (they look like {guess!r}): fix its "
                     "Units header")


def _report_undetermined(names, times, loose, ok):
    """Name the coordinates the tasks leave free (``loose (T, nq)``, :func:`undetermined_coordinates`).
    One the tasks determine in no frame (no marker on a body it moves, no coordinate task) is the
    setup's choice, as in OpenSim (its assembler leaves it where it starts): it stays at its start
    (the default pose, then the previous frame's value) and is named in a warning, the frames being
    converged.  One the tasks determine in other frames (missing markers) makes a frame where they
    do not one of many poses: reported as not converged (``ok`` is updated in place), with a warning
    naming the coordinates and the first such frame (a frame with no marker at all among them)."""
    if not loose.any():
        return
    never = loose.all(axis=0)
    if never.any():
        warnings.warn(f"IK: no marker or coordinate task determines {', '.join(repr(names[k]) for k in np.flatnonzero(never))} "
                      "in any frame: held at the start (the default value, as OpenSim's assembler leaves it); "
                      "weight a marker on a body it moves, add a coordinate task, or lock it", stacklevel=3)
    partial = loose & ~never[None, :]
    frames = partial.any(axis=1)
    if frames.any():
        ok &= ~frames
        first = int(np.argmax(frames))
        coords = ", ".join(repr(names[k]) for k in np.flatnonzero(partial.any(axis=0)))
        warnings.warn(f"IK: at {int(frames.sum())} of {len(times)} frame(s) (first at t = {times[first]:.6g} s) the "
                      f"markers present do not determine {coords}: those poses are one of many and are reported "
                      "as not converged", stacklevel=3)


def _check_zero_frames(names, times, x, present) -> None:
    """Every tracked marker exactly at (0, 0, 0) is what an exporter writes for missing data: refused
    when it holds in every frame (nothing to fit), warned naming the frames when in some (read as
    positions, as OpenSim reads them; the pose there fits the origin)."""
    zero = present.any(axis=1) & np.all(np.where(present[..., None], x == 0.0, True), axis=(1, 2))
    if not zero.any():
        return
    shown = ", ".join(repr(n) for n in names[:8]) + (" ..." if len(names) > 8 else "")
    if zero.all():
        raise ValueError(f"IK: every tracked marker ({shown}) sits exactly at (0, 0, 0) in every frame ({len(times)} "
                         "frames): missing data exported as zeros? there is nothing to fit; give the marker "
                         "positions (metres), NaN where a marker is missing")
    k = np.flatnonzero(zero)
    warnings.warn(f"IK: every tracked marker ({shown}) sits exactly at (0, 0, 0) in {k.size} of {len(times)} frames "
                  f"(t = {', '.join(f'{times[i]:.6g}' for i in k[:8])}{' ...' if k.size > 8 else ''} s): gaps "
                  "exported as zeros? they are fitted as positions (as OpenSim does); give NaN where a marker is "
                  "missing, or drop those frames", stacklevel=3)


#: a frame's RMS marker error above this (m), and above the model's marker spread, is no fit (a bound
#: that keeps a coordinate from the markers leaves tenths of a metre)
_UNFIT_RMS = 1.0


def _flag_unfit_frames(times, xm, present, rms, ok) -> None:
    """Frames whose RMS marker error exceeds both :data:`_UNFIT_RMS` and the spread of the model's
    markers there (RMS distance from their centroid): the markers do not fit the model at any pose
    (another origin or global frame, other markers, another subject).  Reported as not converged
    (``ok`` updated in place), with a warning naming the frames and the errors."""
    p = np.where(present[..., None], xm, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a frame with no marker: NaN, not flagged
        c = np.nanmean(p, axis=1, keepdims=True)
        spread = np.sqrt(np.nanmean(np.sum((p - c) ** 2, axis=-1), axis=1))
    bad = np.isfinite(rms) & (rms > _UNFIT_RMS) & ~(rms <= np.nan_to_num(spread, nan=0.0))
    if not bad.any():
        return
    ok &= ~bad
    k = np.flatnonzero(bad)
    warnings.warn(f"IK: the markers do not fit the model at {k.size} of {len(times)} frame(s): RMS marker error "
                  + ", ".join(f"{rms[i]:.3g} m at t = {times[i]:.6g} s" for i in k[:5]) + (" ..." if k.size > 5 else "")
                  + f" (above {_UNFIT_RMS:g} m and the spread of the model's markers): reported as not converged. "
                  "The data may be in another origin or global frame, or belong to other markers or another "
                  "subject", stacklevel=3)
