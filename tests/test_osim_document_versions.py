"""Joint layouts and socket syntax of older OpenSim documents (:mod:`mbjax.opensim.model.osim_older_documents`).

Each file is a shipped model rewritten into the layout of an older document version, as OpenSim
4.6 reads it back (``Model``/``Joint``/``Component::updateFromXMLNode``), and must load as the
model it came from: the same bodies at the same poses, the same muscle lengths.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax.numpy as jnp
import numpy as np
import pytest

from mbjax import body_poses, mass_matrix
from mbjax.io import load_osim
from mbjax.models import model_path
from mbjax.muscles import muscle_lengths

pytestmark = pytest.mark.filterwarnings("ignore:.*wrapping ignored")

#: a child-frame placement that is not the identity, so that its reading is checked too
_ELBOW_CHILD = ("0.01 -0.02 0.03", "0.1 -0.2 0.3")


def _arm26_3x(version: str):
    """arm26 (a 3.x file, joints in their child bodies) at ``version``, with a placed elbow child frame."""
    tree = ET.parse(model_path("arm26"))
    tree.getroot().set("Version", version)
    elbow = tree.getroot().find(".//CustomJoint[@name='r_elbow']")
    elbow.find("location").text, elbow.find("orientation").text = _ELBOW_CHILD
    return tree


def _write(tree, path):
    tree.write(path, encoding="UTF-8", xml_declaration=True)
    return str(path)


def _same_model(a, b, muscles=True):
    assert a.coordinate_names == b.coordinate_names
    assert a.body_names == b.body_names
    q = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 0.5, len(a.coordinate_names)))
    np.testing.assert_allclose(body_poses(b, q), body_poses(a, q), rtol=0, atol=1e-15)
    if muscles:
        np.testing.assert_allclose(muscle_lengths(b, q), muscle_lengths(a, q), rtol=0, atol=1e-15)


@pytest.fixture(scope="module")
def arm26_reference(tmp_path_factory):
    return load_osim(_write(_arm26_3x("20303"), tmp_path_factory.mktemp("ref") / "arm26.osim"), ignore_wrapping=True)


def test_3x_joints_in_bodies_up_to_30500(tmp_path, arm26_reference):
    """Before 30501 a joint sits in its child body (3.x); from 30500 its child frame is placed by
    ``location_in_child``/``orientation_in_child``."""
    model = load_osim(_write(_arm26_3x("30000"), tmp_path / "v30000.osim"), ignore_wrapping=True)
    _same_model(arm26_reference, model)
    tree = _arm26_3x("30500")
    for holder in tree.getroot().iter("Joint"):
        for j in holder:
            j.find("location").tag, j.find("orientation").tag = "location_in_child", "orientation_in_child"
    _same_model(arm26_reference, load_osim(_write(tree, tmp_path / "v30500.osim"), ignore_wrapping=True))


def _connector(name, connectee):
    con = ET.Element("Connector_PhysicalFrame_", name=name)
    ET.SubElement(con, "connectee_name").text = connectee
    return con


def test_30501_joints_with_connectors_in_the_jointset(tmp_path, arm26_reference):
    """30501 to 30504: joints in the JointSet name their bodies by ``<connectors>`` (``parent_body``,
    ``child_body``) and place their frames by ``location_in_parent`` ... ``orientation_in_child``."""
    tree = _arm26_3x("30501")
    model = tree.getroot().find("Model")
    model.remove(model.find("MarkerSet"))  # from 30501 OpenSim reads a marker's body by socket only
    bodies = model.find("BodySet/objects")
    bodies.remove(bodies.find("Body[@name='ground']"))
    jointset = ET.Element("JointSet")
    objects = ET.SubElement(jointset, "objects")
    for body in bodies:
        holder = body.find("Joint")
        body.remove(holder)
        for j in holder:
            connectors = ET.Element("connectors")
            connectors.append(_connector("parent_body", "../" + j.find("parent_body").text.strip()))
            connectors.append(_connector("child_body", "../" + body.get("name")))
            j.remove(j.find("parent_body"))
            j.insert(0, connectors)
            j.find("location").tag, j.find("orientation").tag = "location_in_child", "orientation_in_child"
            objects.append(j)
    model.insert(list(model).index(model.find("BodySet")) + 1, jointset)
    _same_model(arm26_reference, load_osim(_write(tree, tmp_path / "v30501.osim"), ignore_wrapping=True))


def _older_sockets(root, version):
    """Every ``<socket_NAME>`` of a 4.x document in the syntax of ``version``."""
    for el in list(root.iter()):
        sockets = [c for c in el if c.tag.startswith("socket_")]
        if not sockets:
            continue
        if version < 30508:
            connectors = ET.Element("connectors")
            for s in sockets:
                el.remove(s)
                connectors.append(_connector(s.tag[len("socket_"):], s.text))
            el.insert(0, connectors)
        else:
            prefix = "connector_" if version < 30510 else "socket_"
            for s in sockets:
                s.tag = f"{prefix}{s.tag[len('socket_'):]}_connectee_name"


@pytest.mark.parametrize("version", [30505, 30509, 30516])
def test_socket_syntax_before_30517(tmp_path, version):
    """``<connectors>`` (before 30508), ``<connector_NAME_connectee_name>`` (before 30510) and
    ``<socket_NAME_connectee_name>`` (to 30516) read as ``<socket_NAME>``."""
    reference = load_osim(model_path("double_pendulum"))
    tree = ET.parse(model_path("double_pendulum"))
    tree.getroot().set("Version", str(version))
    _older_sockets(tree.getroot(), version)
    assert not any(el.tag.startswith("socket_") and not el.tag.endswith("_connectee_name")
                   for el in tree.getroot().iter())
    _same_model(reference, load_osim(_write(tree, tmp_path / f"v{version}.osim")), muscles=False)


def _long_digits(version: str, shoulder: str, inertia: str):
    tree = _arm26_3x(version)
    root = tree.getroot()
    root.find(".//CustomJoint[@name='r_shoulder']/location_in_parent").text = shoulder
    root.find(".//Body[@name='r_humerus']/inertia_xx").text = inertia
    return tree


def test_converted_numbers_rounded_as_opensim_rounds_them(tmp_path):
    """Before 30505 OpenSim prints a joint's frame placement with 6 significant digits and reads it
    back (and a 3.x body's ``inertia_xx`` ...): the file's digits beyond are not used."""
    long_ = _long_digits("20303", "-0.0175451234567 -0.00712345678 0.171234567", "0.0123456789")
    short = _long_digits("20303", "-0.0175451 -0.00712346 0.171235", "0.0123457")
    a = load_osim(_write(long_, tmp_path / "long.osim"), ignore_wrapping=True)
    b = load_osim(_write(short, tmp_path / "short.osim"), ignore_wrapping=True)
    _same_model(b, a)
    q = jnp.asarray(np.random.default_rng(1).uniform(-0.5, 0.5, len(a.coordinate_names)))
    np.testing.assert_array_equal(mass_matrix(a, q), mass_matrix(b, q))
