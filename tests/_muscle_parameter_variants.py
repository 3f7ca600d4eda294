"""Bad muscle-parameter variants of shipped .osim files, shared by the bad-input tests and their
OpenSim validation twin."""

import re

from mbjax.models import model_path

ARM26 = open(model_path("arm26")).read()
GAIT10 = open(model_path("gait10dof18musc")).read()


def set_property(src: str, muscle: str, prop: str, value: str) -> str:
    """``src`` with ``<prop>value</prop>`` in the element of ``muscle`` (``Curve.property`` inside
    its curve element), replacing the property where the file has it."""
    start = re.search(rf'<(\w+) name="{muscle}">', src)
    end = src.index(f"</{start.group(1)}>", start.end())
    body = src[start.end():end]
    if "." in prop:
        curve, prop = prop.split(".")
        cs = re.search(rf"<{curve}[^>]*>", body)
        ce = body.index(f"</{curve}>", cs.end())
        inner = body[cs.end():ce]
        inner = (re.sub(rf"<{prop}>[^<]*</{prop}>", f"<{prop}>{value}</{prop}>", inner) if f"<{prop}>" in inner
                 else f"<{prop}>{value}</{prop}>" + inner)
        body = body[:cs.end()] + inner + body[ce:]
    elif re.search(rf"\n\s*<{prop}>", body):
        body = re.sub(rf"(\n\s*)<{prop}>[^<]*</{prop}>", rf"\g<1><{prop}>{value}</{prop}>", body, count=1)
    else:
        body = f"<{prop}>{value}</{prop}>" + body
    return src[:start.end()] + body + src[end:]


# (property, bad value, model) for each rule; the model holds a muscle of the rule's class
THELEN_CASES = [
    ("max_isometric_force", "-10"), ("optimal_fiber_length", "0"), ("optimal_fiber_length", "-0.1"),
    ("tendon_slack_length", "0"), ("tendon_slack_length", "-0.2"), ("pennation_angle_at_optimal", "1.5708"),
    ("pennation_angle_at_optimal", "-0.1"), ("pennation_angle_at_optimal", "2"), ("max_contraction_velocity", "0"),
    ("maximum_pennation_angle", "1.6"), ("FmaxTendonStrain", "0"), ("FmaxTendonStrain", "-0.04"),
    ("FmaxMuscleStrain", "0"), ("KshapeActive", "-1"), ("KshapePassive", "0"), ("Af", "0"), ("Flen", "1"),
    ("fv_linear_extrap_threshold", "0.5"), ("activation_time_constant", "0"), ("activation_time_constant", "-0.01"),
    ("deactivation_time_constant", "0"), ("minimum_activation", "0.001"), ("minimum_activation", "1"),
    ("max_isometric_force", "inf"), ("optimal_fiber_length", "-inf"),
]
MILLARD_CASES = [
    ("fiber_damping", "-0.1"), ("minimum_activation", "-0.01"), ("activation_time_constant", "0"),
    ("ForceVelocityCurve.concentric_slope_near_vmax", "0"), ("ForceVelocityCurve.eccentric_slope_near_vmax", "-1"),
    ("ForceVelocityCurve.max_eccentric_velocity_force_multiplier", "0.9"),
    ("TendonForceLengthCurve.strain_at_one_norm_force", "0"), ("TendonForceLengthCurve.strain_at_one_norm_force", "-0.05"),
    ("TendonForceLengthCurve.norm_force_at_toe_end", "1.5"), ("TendonForceLengthCurve.curviness", "2"),
    ("TendonForceLengthCurve.stiffness_at_one_norm_force", "0"),
    ("FiberForceLengthCurve.curviness", "-1"), ("pennation_angle_at_optimal", "1.5707963267948966"),
]
#: the optional curve properties are given all together (OpenSim refuses one without the others)
OPTIONAL = {"TendonForceLengthCurve": {"stiffness_at_one_norm_force": "28.06", "norm_force_at_toe_end": "0.6667",
                                       "curviness": "0.5"},
            "FiberForceLengthCurve": {"stiffness_at_low_force": "0.2", "stiffness_at_one_norm_force": "2.857",
                                      "curviness": "0.75"}}


def with_optional(src, muscle, prop):
    curve = prop.split(".")[0]
    for p, v in OPTIONAL.get(curve, {}).items():
        src = set_property(src, muscle, f"{curve}.{p}", v)
    return src
