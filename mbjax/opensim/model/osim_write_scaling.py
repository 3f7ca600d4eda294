"""What OpenSim's ``Model::scale`` changes in a file besides masses and path points, written by
:func:`mbjax.io.write_osim` after :func:`mbjax.analysis.identify.scale_model`: offset-frame translations
(3.x: ``location_in_parent``, ``location``) times their body's factor, ``CustomJoint`` translation
functions multiplied by ``|axis|ᵀ s_parent``, ``EllipsoidJoint`` radii, wrap-object translations and
dimensions, and the file's marker locations."""

from __future__ import annotations

import numpy as np

from .osim_write_values import _multiply_function, _scale_text
from .osim_xml import _is_identity_function


def _factors(model) -> dict:
    """Body name -> the scale factor applied to the model (empty when nothing was scaled)."""
    info = model.osim
    sc = getattr(info, "scaling", None)
    if sc is None:
        return {}
    f = np.asarray(sc.factors, float)
    if np.all(f == 1.0):
        return {}
    if not np.all(np.isfinite(f) & (f > 0)):
        raise ValueError(f"write_osim: scale factors must be positive and finite, got {f.tolist()}")
    return dict(zip(sc.segments, f.tolist()))


def _write_scaled_frames(loader, twin, factors):
    """Joint frames, translation functions, ellipsoid radii and wrap objects of a scaled model."""
    doc, model = loader.doc, loader.model
    for fr in model.iter("PhysicalOffsetFrame"):  # OffsetFrame::extendScale: the base body's factor
        parent = (fr.findtext("socket_parent") or "").strip()
        owner = next((o for o in model.iter() if fr in list(o.find("frames") if o.find("frames") is not None else [])
                      or fr in list(o.find("components") if o.find("components") is not None else [])), None)
        body = loader._resolve(fr, parent, owner)[0]
        _scale_text(doc, fr, twin[fr], "translation", factors.get(body, 1.0))
    for j, parent, child, _, _ in loader.joints:
        s_parent = factors.get(parent, 1.0)
        if loader.version < 30000:  # 3.x joint frames
            _scale_text(doc, j, twin[j], "location_in_parent", s_parent)
            _scale_text(doc, j, twin[j], "location", factors.get(child, 1.0))
        if j.tag == "EllipsoidJoint":
            _scale_text(doc, j, twin[j], "radii_x_y_z", s_parent)
        st = j.find("SpatialTransform")
        if j.tag != "CustomJoint" or st is None:
            continue
        for ta in st:
            if ta.tag != "TransformAxis" or not (ta.get("name") or "").startswith("translation"):
                continue
            if not any(c.tag not in ("coordinates", "axis") for c in ta) or _is_identity_function(doc, ta):
                continue  # no function (Constant 0) or a degree of freedom: SpatialTransform::scale skips it
            axis = np.asarray([float(v) for v in ta.findtext("axis").split()], float)
            _multiply_function(doc, twin, ta, float(np.abs(axis).sum()) * s_parent)
    for wset in model.iter("WrapObjectSet"):
        holder = wset.find("objects")
        for el in (holder if holder is not None else []):
            owner = next(o for o in model.iter() if wset in list(o))
            if owner.tag == "Ground" or (owner.tag == "Body" and owner.get("name") == "ground"):
                continue
            ref = owner.get("name") if owner.tag == "Body" else owner.get("name")
            body = loader._resolve(el, ref, owner)[0] if owner.tag != "Body" else ref
            f = factors.get(body, 1.0)
            for tag in ("translation", "radius", "length", "dimensions", "inner_radius", "outer_radius"):
                _scale_text(doc, el, twin[el], tag, f)


def _scale_file_markers(loader, twin, factors):
    doc = loader.doc
    mset = loader.model.find("MarkerSet")
    objects = mset.find("objects") if mset is not None else None
    for el in (objects if objects is not None else []):
        ref = (el.findtext("socket_parent_frame") or el.findtext("body") or "").strip()
        body = loader._resolve(el, ref)[0]
        _scale_text(doc, el, twin[el], "location", factors.get(body, 1.0))
