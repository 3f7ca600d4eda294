"""A two-body model whose OpenSim coordinates are not all generalized coordinates of mbjax: ``tilt``
locked at 0.3 rad, ``slide`` (translation) and ``knee`` (rotation) coupled to ``flex`` by linear
couplers.  The file lists ``slide`` before ``flex``; OpenSim orders a CustomJoint's coordinates as its
transform axes use them (``CustomJoint::constructCoordinates``), so its CoordinateSet (and the IK
file) has ``flex`` first.  Used by tests/test_ik.py and tests/validation/test_ik_opensim.py."""

from __future__ import annotations

import os

import numpy as np

TILT = 0.3
SLIDE = (0.05, 0.01)  # slide = 0.05 flex + 0.01
KNEE = (0.5, -0.2)  # knee = 0.5 flex - 0.2
COLUMNS = ("tilt", "flex", "slide", "knee")


def expected_columns(flex):
    """The IK file's columns (degrees for rotations) at ``flex`` (radians), computed by hand."""
    flex = np.asarray(flex, float)
    return np.stack([np.full_like(flex, np.rad2deg(TILT)), np.rad2deg(flex), SLIDE[0] * flex + SLIDE[1],
                     np.rad2deg(KNEE[0] * flex + KNEE[1])], axis=-1)


MODEL = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="coupled_locked">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="thigh"><mass>2</mass><mass_center>0 -0.2 0</mass_center><inertia>0.02 0.01 0.02 0 0 0</inertia></Body>
        <Body name="shank"><mass>1</mass><mass_center>0 -0.2 0</mass_center><inertia>0.01 0.005 0.01 0 0 0</inertia></Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <CustomJoint name="hip">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/thigh</socket_child_frame>
          <coordinates>
            <Coordinate name="tilt"><default_value>{TILT}</default_value><range>-1 1</range><locked>true</locked></Coordinate>
            <Coordinate name="slide"><default_value>0</default_value><range>-1 1</range></Coordinate>
            <Coordinate name="flex"><default_value>0.1</default_value><range>-2 2</range></Coordinate>
          </coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>tilt</coordinates><axis>1 0 0</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation2"><coordinates>flex</coordinates><axis>0 0 1</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation3"><coordinates></coordinates><axis>0 1 0</axis>
              <Constant name="function"><value>0</value></Constant></TransformAxis>
            <TransformAxis name="translation1"><coordinates>slide</coordinates><axis>1 0 0</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="translation2"><coordinates></coordinates><axis>0 1 0</axis>
              <Constant name="function"><value>0.9</value></Constant></TransformAxis>
            <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis>
              <Constant name="function"><value>0</value></Constant></TransformAxis>
          </SpatialTransform>
        </CustomJoint>
        <PinJoint name="knee_joint">
          <socket_parent_frame>thigh_offset</socket_parent_frame>
          <socket_child_frame>/bodyset/shank</socket_child_frame>
          <coordinates><Coordinate name="knee"><default_value>0</default_value><range>-2 2</range></Coordinate></coordinates>
          <frames>
            <PhysicalOffsetFrame name="thigh_offset"><socket_parent>/bodyset/thigh</socket_parent>
              <translation>0.01 -0.4 0.02</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
          </frames>
        </PinJoint>
      </objects>
    </JointSet>
    <ConstraintSet name="constraintset">
      <objects>
        <CoordinateCouplerConstraint name="slide_of_flex">
          <coupled_coordinates_function><LinearFunction><coefficients>{SLIDE[0]} {SLIDE[1]}</coefficients></LinearFunction></coupled_coordinates_function>
          <independent_coordinate_names>flex</independent_coordinate_names>
          <dependent_coordinate_name>slide</dependent_coordinate_name>
        </CoordinateCouplerConstraint>
        <CoordinateCouplerConstraint name="knee_of_flex">
          <coupled_coordinates_function><LinearFunction><coefficients>{KNEE[0]} {KNEE[1]}</coefficients></LinearFunction></coupled_coordinates_function>
          <independent_coordinate_names>flex</independent_coordinate_names>
          <dependent_coordinate_name>knee</dependent_coordinate_name>
        </CoordinateCouplerConstraint>
      </objects>
    </ConstraintSet>
  </Model>
</OpenSimDocument>
"""


def write_model(directory) -> str:
    path = os.path.join(str(directory), "coupled_locked.osim")
    with open(path, "w") as fh:
        fh.write(MODEL)
    return path
