"""Writes notebooks/01_kinematics.ipynb (run once; the notebook itself is executed by the tests)."""
import nbformat as nbf

cells = []
md = lambda s: cells.append(nbf.v4.new_markdown_cell(s))
code = lambda s: cells.append(nbf.v4.new_code_cell(s))

md("""# mbjax 01 — empirical joint maps and closed-form kinematics

A three-body arm whose third joint follows a **two-coordinate rhythm** (a tensor-product bicubic
spline of plane of elevation and elevation, the kind of map de Groot & Brand's shoulder rhythm needs).
We plot joint variables and the velocity of a point along a trajectory and check the closed-form
derivatives (Ehsani Eq. 44, 57, 75, 89) against JAX autodiff.""")
code("""import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import matplotlib.pyplot as plt
import mbjax
from mbjax.maps import BicubicSpline, Affine""")
md("## A rhythm fitted from samples on a grid")
code("""plane = np.linspace(-1.0, 1.5, 11)        # plane of elevation (rad)
elev = np.linspace(0.0, 2.5, 13)          # elevation (rad)
P, E = np.meshgrid(plane, elev, indexing="ij")
rhythm = 0.12 + 0.3 * E - 0.08 * P + 0.05 * np.sin(P) * E   # 'measured' scapular rotation
scap_map = BicubicSpline.fit(("plane", "elevation"), plane, elev, rhythm, policy="clamp")

b = mbjax.ModelBuilder(["plane", "elevation", "rotation"], gravity=[0, -9.81, 0])
b.add_body("scapula", axis=[0, 0, 1], map=scap_map, mass=0.7, com=[0.05, 0, 0], inertia=np.diag([1e-3, 1e-3, 1e-3]))
b.add_body("plane_of_elev", parent="scapula", axis=[0, 1, 0], translation=[0.1, 0, 0], map="plane")
b.add_body("humerus", parent="plane_of_elev", axis=[0, 0, 1], map=Affine(["elevation", "rotation"], [1.0, 0.1]),
           mass=2.0, com=[0, -0.15, 0], inertia=np.diag([0.012, 0.002, 0.012]))
model = b.build()
model.body_names, model.coordinate_names""")
md("## A trajectory, vmapped over 200 time samples")
code("""t = jnp.linspace(0.0, 2.0, 200)
def q_of_t(t):
    return jnp.stack([0.4 * jnp.sin(t), 0.2 + 1.0 * t - 0.2 * t**2, 0.3 * jnp.cos(2 * t)])
qs = jax.vmap(q_of_t)(t)
qds = jax.vmap(jax.jacfwd(q_of_t))(t)
qdds = jax.vmap(jax.jacfwd(jax.jacfwd(q_of_t)))(t)
f = jax.vmap(mbjax.joint_variables, in_axes=(None, 0))(model, qs)
elbow = jnp.array([0.0, -0.3, 0.0])
vel = jax.vmap(lambda q, qd: mbjax.point_velocity(model, q, qd, "humerus", elbow))(qs, qds)
acc = jax.vmap(lambda q, qd, qdd: mbjax.point_acceleration(model, q, qd, qdd, "humerus", elbow))(qs, qds, qdds)
fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
for k, name in enumerate(model.body_names):
    ax[0].plot(t, f[:, k], label=name)
ax[0].set_xlabel("t (s)"); ax[0].set_ylabel("joint variable (rad)"); ax[0].legend()
ax[1].plot(t, jnp.linalg.norm(vel, axis=1), label="|v| elbow (m/s)")
ax[1].plot(t, jnp.linalg.norm(acc, axis=1), label="|a| elbow (m/s²)")
ax[1].set_xlabel("t (s)"); ax[1].legend(); plt.tight_layout(); plt.show()""")
md("## Closed form agrees with autodiff")
code("""pos = lambda t: mbjax.point_positions(model, q_of_t(t), "humerus", elbow)
v_ad = jax.vmap(jax.jacfwd(pos))(t)
a_ad = jax.vmap(jax.jacfwd(jax.jacfwd(pos)))(t)
print("max |v - autodiff| =", float(jnp.max(jnp.abs(vel - v_ad))))
print("max |a - autodiff| =", float(jnp.max(jnp.abs(acc - a_ad))))
q = qs[50]
d = mbjax.pose_derivatives(model, q)
jac = jax.jacfwd(lambda x: mbjax.body_poses(model, x))(q)
hes = jax.hessian(lambda x: mbjax.body_poses(model, x))(q)
print("max |dT/dq - jacfwd| =", float(jnp.max(jnp.abs(d.d_pose - jac))))
print("max |d2T/dq2 - hessian| =", float(jnp.max(jnp.abs(d.dd_pose - hes))))
assert jnp.max(jnp.abs(vel - v_ad)) < 1e-12 and jnp.max(jnp.abs(acc - a_ad)) < 1e-10
assert jnp.max(jnp.abs(d.dd_pose - hes)) < 1e-12""")
md("""The rhythm map was fitted with `policy="clamp"`: outside the measured grid the joint holds its
edge value (derivatives zero). The default policy, `"error"`, raises instead of returning a silent
extrapolation.""")
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(nb, "notebooks/01_kinematics.ipynb")
