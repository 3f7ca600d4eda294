"""Shared OpenSim test fixtures: data paths, wrap stripping and a synthetic coupled model.

Used by ``tests/test_osim.py`` (SciPy / hand / autodiff references) and
``tests/validation/test_opensim.py`` (OpenSim itself as the reference).
"""

from __future__ import annotations

import os
import re

import pytest

from mbjax._data import shared_data
from mbjax.models import arm26_path

DATA = shared_data("osim")
ARM26 = arm26_path()  # shipped in the wheel (Apache-2.0)
MOBL = os.path.join(DATA, "MOBL_ARMS_fixed_41-ignoreTendonCompl.osim")
needs_arm26 = pytest.mark.skipif(not os.path.exists(ARM26), reason=f"{ARM26} not found")
needs_mobl = pytest.mark.skipif(
    not os.path.exists(MOBL),
    reason=f"MoBL model not found at {MOBL} (non-commercial licence, not shipped; set MBJAX_SHARED_DATA, see README 'Data')",
)


def strip_wrapping(src, dst):
    """Copy of an .osim file with every PathWrapSet emptied (straight-line paths)."""
    with open(src) as fh:
        text = fh.read()
    text = re.sub(r"<PathWrapSet>.*?</PathWrapSet>", "<PathWrapSet><objects /><groups /></PathWrapSet>", text,
                  flags=re.S)
    text = re.sub(r"<PathWrapSet\s*/>", "", text)
    with open(dst, "w") as fh:
        fh.write(text)
    return dst


# GCVSpline knots of the coupler d1 = g(a) (quintic, error variance 0) and the chain d2 = s(d1)
GCV_X = [-2.0, -1.3, -0.7, 0.0, 0.6, 1.1, 1.7, 2.2]
GCV_Y = [-0.9, -0.7, -0.35, 0.05, 0.3, 0.62, 0.8, 1.05]
CHAIN_X = [-1.5, -0.5, 0.0, 0.7, 1.5]
CHAIN_Y = [0.2, -0.1, 0.0, 0.25, 0.3]
#: MultivariatePolynomialFunction coefficients of m = P(a, b), order 2 (terms 1, b, b², a, ab, a²)
MULTI_COEF = [0.1, 0.3, -0.05, 0.4, 0.2, -0.1]


def _nums(v):
    return " ".join(repr(float(x)) for x in v)


COUPLED_MODEL = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="coupled">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="link">
          <mass>1.5</mass>
          <mass_center>0.02 -0.1 0.01</mass_center>
          <inertia>0.02 0.015 0.01 0.001 0 0.002</inertia>
          <components>
            <PhysicalOffsetFrame name="tilted">
              <socket_parent>..</socket_parent>
              <translation>0.01 -0.05 0.02</translation>
              <orientation>0.3 -0.2 0.5</orientation>
            </PhysicalOffsetFrame>
          </components>
        </Body>
        <Body name="tip">
          <mass>0.5</mass>
          <mass_center>0 -0.05 0</mass_center>
          <inertia>0.003 0.003 0.002 0 0 0</inertia>
        </Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <CustomJoint name="cj">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/link</socket_child_frame>
          <coordinates>
            <Coordinate name="a"><default_value>0.1</default_value><range>-2 2</range></Coordinate>
            <Coordinate name="b"><default_value>-0.2</default_value><range>-1.5 1.5</range></Coordinate>
            <Coordinate name="d1"><range>-3 3</range></Coordinate>
            <Coordinate name="d2"><range>-3 3</range></Coordinate>
            <Coordinate name="m"><range>-3 3</range></Coordinate>
          </coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>a</coordinates><axis>0 0 1</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation2"><coordinates>d1</coordinates><axis>1 0 0</axis>
              <SimmSpline name="function"><x>-3 -1 0 1 3</x><y>-2.5 -0.9 0 1.1 2.4</y></SimmSpline></TransformAxis>
            <TransformAxis name="rotation3"><coordinates>m</coordinates><axis>0 0.6 0.8</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="translation1"><coordinates>d2</coordinates><axis>1 0 0</axis>
              <LinearFunction name="function"><coefficients>0.1 0.02</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="translation2"><coordinates>b</coordinates><axis>0 1 0</axis>
              <GCVSpline name="function"><half_order>2</half_order><x>-2 -1 0 1 2</x><y>-0.05 -0.02 0 0.03 0.04</y></GCVSpline></TransformAxis>
            <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis>
              <Constant name="function"><value>0.03</value></Constant></TransformAxis>
          </SpatialTransform>
        </CustomJoint>
        <PinJoint name="pin">
          <socket_parent_frame>/bodyset/link/tilted</socket_parent_frame>
          <socket_child_frame>/bodyset/tip</socket_child_frame>
          <coordinates><Coordinate name="c"><default_value>0.3</default_value><range>-2 2</range></Coordinate></coordinates>
        </PinJoint>
      </objects>
    </JointSet>
    <ConstraintSet name="constraintset">
      <objects>
        <CoordinateCouplerConstraint name="chain_second">
          <independent_coordinate_names>d1</independent_coordinate_names>
          <dependent_coordinate_name>d2</dependent_coordinate_name>
          <coupled_coordinates_function>
            <NaturalCubicSpline name="function"><x>{_nums(CHAIN_X)}</x><y>{_nums(CHAIN_Y)}</y></NaturalCubicSpline>
          </coupled_coordinates_function>
          <scale_factor>1.5</scale_factor>
        </CoordinateCouplerConstraint>
        <CoordinateCouplerConstraint name="chain_first">
          <independent_coordinate_names>a</independent_coordinate_names>
          <dependent_coordinate_name>d1</dependent_coordinate_name>
          <coupled_coordinates_function>
            <GCVSpline name="function"><half_order>3</half_order><error_variance>0</error_variance>
              <x>{_nums(GCV_X)}</x><y>{_nums(GCV_Y)}</y></GCVSpline>
          </coupled_coordinates_function>
        </CoordinateCouplerConstraint>
        <CoordinateCouplerConstraint name="two_independent">
          <independent_coordinate_names>a b</independent_coordinate_names>
          <dependent_coordinate_name>m</dependent_coordinate_name>
          <coupled_coordinates_function>
            <MultivariatePolynomialFunction name="function"><dimension>2</dimension><order>2</order>
              <coefficients>{_nums(MULTI_COEF)}</coefficients></MultivariatePolynomialFunction>
          </coupled_coordinates_function>
        </CoordinateCouplerConstraint>
      </objects>
    </ConstraintSet>
    <ForceSet name="forceset">
      <objects>
        <Thelen2003Muscle name="mus">
          <max_isometric_force>100</max_isometric_force>
          <GeometryPath name="path"><PathPointSet><objects>
            <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>0.1 0.05 0.02</location></PathPoint>
            <PathPoint name="via"><socket_parent_frame>/bodyset/link</socket_parent_frame><location>0.03 -0.12 0.01</location></PathPoint>
            <PathPoint name="insertion"><socket_parent_frame>/bodyset/tip</socket_parent_frame><location>0.01 -0.08 0.0</location></PathPoint>
          </objects></PathPointSet></GeometryPath>
        </Thelen2003Muscle>
        <Millard2012EquilibriumMuscle name="moving">
          <max_isometric_force>50</max_isometric_force>
          <GeometryPath name="path"><PathPointSet><objects>
            <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>-0.05 0.02 0.04</location></PathPoint>
            <MovingPathPoint name="slider">
              <socket_parent_frame>/bodyset/link/tilted</socket_parent_frame>
              <location>0 0 0</location>
              <x_location><SimmSpline name="function"><x>-2 -1 0 1 2</x><y>0.01 0.02 0.035 0.03 0.02</y></SimmSpline></x_location>
              <y_location><LinearFunction name="function"><coefficients>0.04 -0.06</coefficients></LinearFunction></y_location>
              <z_location><Constant name="function"><value>0.015</value></Constant></z_location>
              <socket_x_coordinate>/jointset/cj/d1</socket_x_coordinate>
              <socket_y_coordinate>/jointset/cj/d1</socket_y_coordinate>
              <socket_z_coordinate>/jointset/cj/d1</socket_z_coordinate>
            </MovingPathPoint>
            <PathPoint name="insertion"><socket_parent_frame>/bodyset/tip</socket_parent_frame><location>-0.01 -0.06 0.01</location></PathPoint>
          </objects></PathPointSet></GeometryPath>
        </Millard2012EquilibriumMuscle>
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""


def write_coupled_model(directory) -> str:
    """Write :data:`COUPLED_MODEL` into ``directory``; returns the file path."""
    path = os.path.join(str(directory), "coupled.osim")
    with open(path, "w") as fh:
        fh.write(COUPLED_MODEL)
    return path


#: A CustomJoint whose TransformAxes leave out their function, as OpenSim 4.x allows: rotation2
#: names a coordinate but has no function, translation1 has neither, rotation3 and translation3
#: are left out (OpenSim: default axes z, z; every missing function is Constant(0)).
FUNCTIONLESS_AXIS_MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="functionless_axis">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="link"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body>
        <Body name="tip"><mass>0.5</mass><mass_center>0 -0.05 0</mass_center><inertia>0.003 0.003 0.002 0 0 0</inertia></Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <CustomJoint name="cj">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/link</socket_child_frame>
          <coordinates>
            <Coordinate name="a"><default_value>0.3</default_value><range>-2 2</range></Coordinate>
            <Coordinate name="b"><default_value>-0.2</default_value><range>-2 2</range></Coordinate>
          </coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>a</coordinates><axis>0.6 0 0.8</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation2"><coordinates>b</coordinates><axis>0 1 0</axis></TransformAxis>
            <TransformAxis name="translation1"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
            <TransformAxis name="translation2"><coordinates>b</coordinates><axis>0 1 0</axis>
              <LinearFunction name="function"><coefficients>0.1 0.02</coefficients></LinearFunction></TransformAxis>
          </SpatialTransform>
        </CustomJoint>
        <PinJoint name="pin">
          <socket_parent_frame>/bodyset/link</socket_parent_frame>
          <socket_child_frame>/bodyset/tip</socket_child_frame>
          <coordinates><Coordinate name="c"><default_value>0.1</default_value><range>-2 2</range></Coordinate></coordinates>
        </PinJoint>
      </objects>
    </JointSet>
  </Model>
</OpenSimDocument>
"""

#: A pin joint and a muscle whose middle point is a ConditionalPathPoint on ``theta`` in
#: [COND_LO, COND_HI], off the straight line (the path length jumps where it switches).
COND_LO, COND_HI = -0.4, 0.7
CONDITIONAL_MODEL = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="conditional">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="link"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <PinJoint name="pin">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/link</socket_child_frame>
          <coordinates><Coordinate name="theta"><default_value>0</default_value><range>-3 3</range></Coordinate></coordinates>
        </PinJoint>
      </objects>
    </JointSet>
    <ForceSet name="forceset">
      <objects>
        <Thelen2003Muscle name="m">
          <max_isometric_force>100</max_isometric_force>
          <GeometryPath name="path"><PathPointSet><objects>
            <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>0.1 0.05 0</location></PathPoint>
            <ConditionalPathPoint name="cond"><socket_parent_frame>/bodyset/link</socket_parent_frame>
              <location>0.06 -0.08 0.02</location>
              <socket_coordinate>/jointset/pin/theta</socket_coordinate>
              <range>{COND_LO!r} {COND_HI!r}</range></ConditionalPathPoint>
            <PathPoint name="insertion"><socket_parent_frame>/bodyset/link</socket_parent_frame><location>0 -0.2 0</location></PathPoint>
          </objects></PathPointSet></GeometryPath>
        </Thelen2003Muscle>
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""


def write_model(directory, text: str, name: str) -> str:
    """Write an .osim ``text`` as ``directory/name``; returns the file path."""
    path = os.path.join(str(directory), name)
    with open(path, "w") as fh:
        fh.write(text)
    return path


def conditional_boundary_poses(lo: float, hi: float, tol: float = 1e-5):
    """Poses of the coordinate at and around a conditional range [lo, hi] (OpenSim: active on
    [lo - tol, hi + tol] as doubles): the bare ends, points between the bare and widened ends,
    the widened ends exactly, and the next doubles beyond them (inactive) and a little further."""
    import numpy as np

    wlo, whi = lo - tol, hi + tol
    return np.array([
        lo, hi, lo - 0.5 * tol, hi + 0.5 * tol, wlo, whi,
        np.nextafter(wlo, -np.inf), np.nextafter(whi, np.inf), wlo - 1e-9, whi + 1e-9,
        np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf), 0.5 * (lo + hi),
    ])


#: CONDITIONAL_MODEL with the insertion a MovingPathPoint on ``theta`` (range [-3, 3]): x = 0.02 θ,
#: y = SimmSpline, z constant.  OpenSim clamps θ to its range before evaluating the functions.
MOVING_MODEL = CONDITIONAL_MODEL.replace(
    '<PathPoint name="insertion"><socket_parent_frame>/bodyset/link</socket_parent_frame><location>0 -0.2 0</location></PathPoint>',
    """<MovingPathPoint name="insertion"><socket_parent_frame>/bodyset/link</socket_parent_frame>
              <x_location><LinearFunction name="function"><coefficients>0.02 0</coefficients></LinearFunction></x_location>
              <y_location><SimmSpline name="function"><x>-1 0 1 2</x><y>-0.21 -0.2 -0.18 -0.19</y></SimmSpline></y_location>
              <z_location><Constant name="function"><value>0.01</value></Constant></z_location>
              <socket_x_coordinate>/jointset/pin/theta</socket_x_coordinate>
              <socket_y_coordinate>/jointset/pin/theta</socket_y_coordinate>
              <socket_z_coordinate>/jointset/pin/theta</socket_z_coordinate>
            </MovingPathPoint>""")


#: OpenSim's model library (github.com/opensim-org/opensim-models), not vendored: point
#: ``OPENSIM_MODELS_DIR`` at a checkout (its ``Models/`` folder) to run the tests that need it.
OPENSIM_MODELS = os.environ.get("OPENSIM_MODELS_DIR", "")
RAJAGOPAL = os.path.join(OPENSIM_MODELS, "Models", "Rajagopal", "Rajagopal2016.osim")
needs_rajagopal = pytest.mark.skipif(
    not (OPENSIM_MODELS and os.path.exists(RAJAGOPAL)),
    reason="Rajagopal2016.osim not found: set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models",
)


#: CONDITIONAL_MODEL whose conditional point reads ``phi``, the coordinate of a second pin joint
#: (link -> tip) made dependent by a CoordinateCouplerConstraint: phi = COUPLE_A · theta + COUPLE_B.
#: As in OpenSim's wrist.osim, where points switch on coupled wrist coordinates.
COUPLE_A, COUPLE_B = 0.5, 0.1
COUPLED_CONDITIONAL_MODEL = CONDITIONAL_MODEL.replace(
    "</objects>\n    </BodySet>",
    '  <Body name="tip"><mass>0.5</mass><mass_center>0 -0.05 0</mass_center><inertia>0.003 0.003 0.002 0 0 0</inertia></Body>\n'
    "      </objects>\n    </BodySet>", 1,
).replace(
    "        </PinJoint>\n      </objects>\n    </JointSet>",
    """        </PinJoint>
        <PinJoint name="pin2">
          <socket_parent_frame>/bodyset/link</socket_parent_frame>
          <socket_child_frame>/bodyset/tip</socket_child_frame>
          <coordinates><Coordinate name="phi"><default_value>0.1</default_value><range>-3 3</range></Coordinate></coordinates>
        </PinJoint>
      </objects>
    </JointSet>
    <ConstraintSet name="constraintset">
      <objects>
        <CoordinateCouplerConstraint name="couple">
          <coupled_coordinates_function><LinearFunction><coefficients>""" + f"{COUPLE_A!r} {COUPLE_B!r}" + """</coefficients></LinearFunction></coupled_coordinates_function>
          <independent_coordinate_names>theta</independent_coordinate_names>
          <dependent_coordinate_name>phi</dependent_coordinate_name>
          <scale_factor>1</scale_factor>
        </CoordinateCouplerConstraint>
      </objects>
    </ConstraintSet>""", 1,
).replace("<socket_coordinate>/jointset/pin/theta</socket_coordinate>", "<socket_coordinate>/jointset/pin2/phi</socket_coordinate>")
