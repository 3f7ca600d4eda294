"""An IK coordinate task as OpenSim's setup files write it (``IKCoordinateTask``): a plain record,
read by the IK and Scale setup readers and used by :func:`mbjax.inverse_kinematics`."""

from __future__ import annotations

from typing import NamedTuple


#: the values of an ``IKCoordinateTask``'s ``<value_type>`` (OpenSim's)
VALUE_TYPES = ("default_value", "manual_value", "from_file")


class CoordinateTask(NamedTuple):
    """An ``IKCoordinateTask``: ``weight`` and the reference ``value_type`` (``"default_value"``,
    ``"manual_value"`` with ``value`` in radians / metres, or ``"from_file"``)."""

    weight: float
    value_type: str = "default_value"
    value: float = 0.0
