"""A synthetic OpenSim model with Hunt-Crossley contact (tests of mbjax.forces.hunt_crossley).

Ground -> foot (6-dof CustomJoint "f_*") -> toe (PinJoint "mtp" at the foot's front); ground -> ball
(6-dof CustomJoint "b_*"); ground -> board (SliderJoint "board" along x from (1, 0.5, 0)).  Geometry:
"floor" (half space on ground, normal +y), spheres "heel_a", "heel_b", "mid" on the foot, "toe_s"
on the toe, "ball_s" on the ball, "wall" (half space on the board, normal -x).  Forces:
"ground_contact" (floor, heels with parameters A; mid, toe_s with B: mixed pairs) and
"ball_contact" (ball_s, wall with C; toe_s again with D: a sphere-sphere pair and a half space on
a moving body).
"""

import numpy as np

FOOT = ("f_rx", "f_ry", "f_rz", "f_tx", "f_ty", "f_tz")
BALL = ("b_rx", "b_ry", "b_rz", "b_tx", "b_ty", "b_tz")
COORDINATES = FOOT + ("mtp",) + BALL + ("board",)
BALL_RADIUS, TOE_RADIUS = 0.08, 0.02


def _coords(names):
    return "".join(f'<Coordinate name="{n}"><default_value>0</default_value><range>-5 5</range></Coordinate>'
                   for n in names)


def _six_dof(name, child, names):
    """A CustomJoint from ground: X-Y-Z rotations then translations along ground's axes (Euler angles in
    OpenSim's state too, unlike a FreeJoint's quaternion)."""
    axes = ("1 0 0", "0 1 0", "0 0 1") * 2
    kinds = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")
    ta = "".join(f'<TransformAxis name="{k}"><coordinates>{n}</coordinates><axis>{a}</axis>'
                 '<LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>'
                 for k, n, a in zip(kinds, names, axes))
    return (f'<CustomJoint name="{name}"><socket_parent_frame>/ground</socket_parent_frame>'
            f"<socket_child_frame>/bodyset/{child}</socket_child_frame><coordinates>{_coords(names)}</coordinates>"
            f"<SpatialTransform>{ta}</SpatialTransform></CustomJoint>")


def _sphere(name, frame, loc, r):
    return (f'<ContactSphere name="{name}"><socket_frame>{frame}</socket_frame><location>{loc}</location>'
            f'<orientation>0.1 -0.2 0.3</orientation><radius>{r}</radius></ContactSphere>')


def _params(geom, k, c, us, ud, uv):
    return (f"<HuntCrossleyForce::ContactParameters><geometry>{geom}</geometry><stiffness>{k}</stiffness>"
            f"<dissipation>{c}</dissipation><static_friction>{us}</static_friction>"
            f"<dynamic_friction>{ud}</dynamic_friction><viscous_friction>{uv}</viscous_friction>"
            "</HuntCrossleyForce::ContactParameters>")


def _force(name, params, vt):
    return (f'<HuntCrossleyForce name="{name}"><HuntCrossleyForce::ContactParametersSet name="contact_parameters">'
            f"<objects>{''.join(params)}</objects></HuntCrossleyForce::ContactParametersSet>"
            f"<transition_velocity>{vt}</transition_velocity></HuntCrossleyForce>")


CONTACT_MODEL = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="contact">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset"><objects>
      <Body name="foot"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.01 0.02 0.02 0 0 0</inertia></Body>
      <Body name="toe"><mass>0.2</mass><mass_center>0.02 0 0</mass_center><inertia>0.001 0.001 0.001 0 0 0</inertia></Body>
      <Body name="ball"><mass>0.4</mass><mass_center>0 0 0</mass_center><inertia>0.002 0.002 0.002 0 0 0</inertia></Body>
      <Body name="board"><mass>2</mass><mass_center>0 0 0</mass_center><inertia>0.1 0.1 0.1 0 0 0</inertia></Body>
    </objects></BodySet>
    <JointSet name="jointset"><objects>
      {_six_dof("foot_free", "foot", FOOT)}
      <PinJoint name="mtp_j"><socket_parent_frame>foot_front</socket_parent_frame>
        <socket_child_frame>/bodyset/toe</socket_child_frame><coordinates>{_coords(["mtp"])}</coordinates>
        <frames><PhysicalOffsetFrame name="foot_front"><socket_parent>/bodyset/foot</socket_parent>
          <translation>0.1 -0.02 0</translation><orientation>0 0.2 0</orientation></PhysicalOffsetFrame></frames></PinJoint>
      {_six_dof("ball_free", "ball", BALL)}
      <SliderJoint name="board_j"><socket_parent_frame>g_board</socket_parent_frame>
        <socket_child_frame>/bodyset/board</socket_child_frame><coordinates>{_coords(["board"])}</coordinates>
        <frames><PhysicalOffsetFrame name="g_board"><socket_parent>/ground</socket_parent>
          <translation>1 0.5 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames></SliderJoint>
    </objects></JointSet>
    <ContactGeometrySet name="contactgeometryset"><objects>
      <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 0 0</location>
        <orientation>0 0 -1.5707963267948966</orientation></ContactHalfSpace>
      {_sphere("heel_a", "/bodyset/foot", "-0.1 -0.03 0.04", 0.03)}
      {_sphere("heel_b", "/bodyset/foot", "-0.1 -0.035 -0.04", 0.025)}
      {_sphere("mid", "/bodyset/foot", "0.05 -0.035 0", 0.02)}
      {_sphere("toe_s", "/bodyset/toe", "0.04 -0.01 0", TOE_RADIUS)}
      {_sphere("ball_s", "/bodyset/ball", "0 0 0", BALL_RADIUS)}
      <ContactHalfSpace name="wall"><socket_frame>/bodyset/board</socket_frame><location>0 0 0</location>
        <orientation>0 0 0</orientation></ContactHalfSpace>
    </objects></ContactGeometrySet>
    <ForceSet name="forceset"><objects>
      {_force("ground_contact", [_params("floor heel_a heel_b", 2e6, 1.0, 0.8, 0.5, 0.3),
                                 _params("mid toe_s", 5e6, 0.4, 0.6, 0.4, 0.1)], 0.2)}
      {_force("ball_contact", [_params("ball_s wall", 1e6, 0.7, 0.5, 0.3, 0.0),
                               _params("toe_s", 4e5, 1.5, 0.9, 0.9, 0.6)], 0.1)}
    </objects></ForceSet>
  </Model>
</OpenSimDocument>
"""


def contact_state(model, element, rng, tilt=0.06):
    """A random pose with several spheres in contact: foot spheres on the floor (deepest 2-10 mm),
    the ball on the toe sphere and against the wall (1-10 mm)."""
    import jax.numpy as jnp

    from mbjax.forces.hunt_crossley import _all_poses

    names = model.coordinate_names
    ix = {n: names.index(n) for n in COORDINATES}
    q = np.zeros(len(names))
    for n in FOOT[:3]:
        q[ix[n]] = rng.uniform(-tilt, tilt)
    for n in BALL[:3]:
        q[ix[n]] = rng.uniform(-1, 1)
    q[ix["f_tx"]], q[ix["f_tz"]], q[ix["mtp"]] = rng.uniform(-0.2, 0.2, 3)
    floor = [k for k, (a, b) in enumerate(element.pairs) if element.element_names[element.surface_group[a]] ==
             "ground_contact"]
    target = rng.uniform(0.002, 0.01)
    for _ in range(3):  # depth is linear in f_ty for the floor (normal +y)
        depth = np.asarray(element.contacts(model, jnp.asarray(q))[0])[floor]
        q[ix["f_ty"]] += depth.max() - target
    x = np.asarray(element._surface_poses(_all_poses(model, jnp.asarray(q))))
    toe = x[4, :3, 3]  # surfaces: floor, heel_a, heel_b, mid, toe_s, ...
    u = rng.normal(size=3)
    u[0] = abs(u[0]) + 0.5
    u /= np.linalg.norm(u)
    centre = toe + u * (BALL_RADIUS + TOE_RADIUS - rng.uniform(0.001, 0.01))
    q[ix["b_tx"]], q[ix["b_ty"]], q[ix["b_tz"]] = centre
    q[ix["board"]] = centre[0] + BALL_RADIUS - rng.uniform(0.001, 0.01) - 1.0
    return q
