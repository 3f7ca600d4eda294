"""A synthetic OpenSim model with one of each force element mbjax models (tests of mbjax.forces).

Ground -> a (PinJoint "pin") -> b (SliderJoint "slide") -> c (CustomJoint: rotation about
(0.6, 0, 0.8) by "r1", about y by "cdep", translation along x by "t1"); "cdep" is coupled to "r1"
by ``cdep = 0.3 r1² + 0.5 r1 + 0.1`` (PolynomialFunction, highest power first).
"""

COUPLER = (0.3, 0.5, 0.1)
EXPRESSION = "-10*q^3 - 0.5*qdot + 2*sin(q)*exp(-q^2) - step(q-0.2)*3*(q-0.2) + max(q,0)*qdot/(1+square(qdot))"

FORCE_MODEL = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="forces">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="a"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.012 0.009 0 0 0</inertia></Body>
        <Body name="b"><mass>0.7</mass><mass_center>0.02 -0.05 0</mass_center><inertia>0.004 0.003 0.005 0 0 0</inertia></Body>
        <Body name="c"><mass>0.5</mass><mass_center>0 -0.05 0.01</mass_center><inertia>0.003 0.003 0.002 0 0 0</inertia></Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <PinJoint name="pinj">
          <socket_parent_frame>g_off</socket_parent_frame>
          <socket_child_frame>/bodyset/a</socket_child_frame>
          <coordinates><Coordinate name="pin"><default_value>0</default_value><range>-3 3</range></Coordinate></coordinates>
          <frames><PhysicalOffsetFrame name="g_off"><socket_parent>/ground</socket_parent>
            <translation>0 0.1 0</translation><orientation>0.2 0 0</orientation></PhysicalOffsetFrame></frames>
        </PinJoint>
        <SliderJoint name="slidej">
          <socket_parent_frame>a_off</socket_parent_frame>
          <socket_child_frame>/bodyset/b</socket_child_frame>
          <coordinates><Coordinate name="slide"><default_value>0</default_value><range>-1 1</range></Coordinate></coordinates>
          <frames><PhysicalOffsetFrame name="a_off"><socket_parent>/bodyset/a</socket_parent>
            <translation>0 -0.3 0</translation><orientation>0 0 0.4</orientation></PhysicalOffsetFrame></frames>
        </SliderJoint>
        <CustomJoint name="cj">
          <socket_parent_frame>/bodyset/b</socket_parent_frame>
          <socket_child_frame>/bodyset/c</socket_child_frame>
          <coordinates>
            <Coordinate name="r1"><default_value>0</default_value><range>-2 2</range></Coordinate>
            <Coordinate name="cdep"><default_value>0.1</default_value><range>-2 2</range></Coordinate>
            <Coordinate name="t1"><default_value>0</default_value><range>-1 1</range></Coordinate>
          </coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>r1</coordinates><axis>0.6 0 0.8</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation2"><coordinates>cdep</coordinates><axis>0 1 0</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation3"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
            <TransformAxis name="translation1"><coordinates>t1</coordinates><axis>1 0 0</axis>
              <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="translation2"><coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
            <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis></TransformAxis>
          </SpatialTransform>
        </CustomJoint>
      </objects>
    </JointSet>
    <ConstraintSet name="constraintset">
      <objects>
        <CoordinateCouplerConstraint name="couple">
          <coupled_coordinates_function><PolynomialFunction name="f">
            <coefficients>{' '.join(map(str, COUPLER))}</coefficients></PolynomialFunction></coupled_coordinates_function>
          <independent_coordinate_names>r1</independent_coordinate_names>
          <dependent_coordinate_name>cdep</dependent_coordinate_name>
          <scale_factor>1</scale_factor>
        </CoordinateCouplerConstraint>
      </objects>
    </ConstraintSet>
    <ForceSet name="forceset">
      <objects>
        <CoordinateLimitForce name="lim_pin"><coordinate>pin</coordinate>
          <upper_stiffness>2</upper_stiffness><upper_limit>30</upper_limit><lower_stiffness>3</lower_stiffness>
          <lower_limit>-40</lower_limit><damping>0.05</damping><transition>10</transition></CoordinateLimitForce>
        <CoordinateLimitForce name="lim_slide"><coordinate>slide</coordinate>
          <upper_stiffness>500</upper_stiffness><upper_limit>0.1</upper_limit><lower_stiffness>800</lower_stiffness>
          <lower_limit>-0.1</lower_limit><damping>5</damping><transition>0.05</transition></CoordinateLimitForce>
        <CoordinateLimitForce name="lim_cdep"><coordinate>cdep</coordinate>
          <upper_stiffness>1</upper_stiffness><upper_limit>20</upper_limit><lower_stiffness>1.5</lower_stiffness>
          <lower_limit>-20</lower_limit><damping>0.02</damping><transition>8</transition></CoordinateLimitForce>
        <SpringGeneralizedForce name="sgf"><coordinate>t1</coordinate>
          <stiffness>40</stiffness><rest_length>0.05</rest_length><viscosity>3</viscosity></SpringGeneralizedForce>
        <SpringGeneralizedForce name="sgf_dep"><coordinate>cdep</coordinate>
          <stiffness>7</stiffness><rest_length>0.2</rest_length><viscosity>0.4</viscosity></SpringGeneralizedForce>
        <ExpressionBasedCoordinateForce name="expr"><coordinate>r1</coordinate>
          <expression>{EXPRESSION}</expression></ExpressionBasedCoordinateForce>
        <PointToPointSpring name="p2p">
          <socket_body1>/bodyset/a</socket_body1><socket_body2>/bodyset/c</socket_body2>
          <point1>0.05 -0.1 0.02</point1><point2>0.01 0.02 0.03</point2>
          <stiffness>300</stiffness><rest_length>0.2</rest_length></PointToPointSpring>
        <BushingForce name="bush">
          <socket_frame1>g_bush</socket_frame1><socket_frame2>c_bush</socket_frame2>
          <frames>
            <PhysicalOffsetFrame name="g_bush"><socket_parent>/ground</socket_parent>
              <translation>0.02 -0.4 0.01</translation><orientation>0.1 -0.2 0.3</orientation></PhysicalOffsetFrame>
            <PhysicalOffsetFrame name="c_bush"><socket_parent>/bodyset/c</socket_parent>
              <translation>0.01 -0.03 0.02</translation><orientation>-0.2 0.1 0.25</orientation></PhysicalOffsetFrame>
          </frames>
          <rotational_stiffness>5 7 9</rotational_stiffness><translational_stiffness>100 200 300</translational_stiffness>
          <rotational_damping>0.1 0.2 0.3</rotational_damping><translational_damping>1 2 3</translational_damping>
        </BushingForce>
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""

#: OpenSim class of each modelled element of FORCE_MODEL
KINDS = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce", "PointToPointSpring",
         "BushingForce")


#: A coordinate a CustomJoint moves only through a LinearFunction of slope 0.5 is *coupled* in OpenSim 4.x
#: (``CustomJoint::constructCoordinates``), so a CoordinateLimitForce on it takes its limits, stiffnesses and
#: damping as written (no per-degree conversion; MoBL-ARMS' wrist ``deviation`` and ``flexion``, moved through
#: splines, are such coordinates); "p" (a PinJoint) is rotational and converted.
COUPLED_LIMIT_MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="coupled_limits">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="a"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.012 0.009 0 0 0</inertia></Body>
        <Body name="b"><mass>0.5</mass><mass_center>0 -0.05 0.01</mass_center><inertia>0.003 0.003 0.002 0 0 0</inertia></Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <PinJoint name="pinj">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/a</socket_child_frame>
          <coordinates><Coordinate name="p"><default_value>0</default_value><range>-1 1</range></Coordinate></coordinates>
        </PinJoint>
        <CustomJoint name="cj">
          <socket_parent_frame>/bodyset/a</socket_parent_frame>
          <socket_child_frame>/bodyset/b</socket_child_frame>
          <coordinates><Coordinate name="w"><default_value>0</default_value><range>-1 1</range></Coordinate></coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>w</coordinates><axis>0 0 1</axis>
              <LinearFunction name="function"><coefficients>0.5 0</coefficients></LinearFunction></TransformAxis>
            <TransformAxis name="rotation2"><coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
            <TransformAxis name="rotation3"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
            <TransformAxis name="translation1"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
            <TransformAxis name="translation2"><coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
            <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis></TransformAxis>
          </SpatialTransform>
        </CustomJoint>
      </objects>
    </JointSet>
    <ForceSet name="forceset">
      <objects>
        <CoordinateLimitForce name="lim_p"><coordinate>p</coordinate>
          <upper_stiffness>2</upper_stiffness><upper_limit>20</upper_limit><lower_stiffness>3</lower_stiffness>
          <lower_limit>-25</lower_limit><damping>0.05</damping><transition>5</transition></CoordinateLimitForce>
        <CoordinateLimitForce name="lim_w"><coordinate>w</coordinate>
          <upper_stiffness>40</upper_stiffness><upper_limit>0.2</upper_limit><lower_stiffness>60</lower_stiffness>
          <lower_limit>-0.3</lower_limit><damping>0.5</damping><transition>0.1</transition></CoordinateLimitForce>
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""
