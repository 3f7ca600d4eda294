"""Documents older than OpenSim 4.0's, read as OpenSim 4.6 converts them: the socket syntax of the
4.0 development versions (30501 to 30516), the document versions that changed a joint's layout,
and the numbers OpenSim rounds while converting.

A component names the component it connects to (its *connectee*) in a form that changed with the
document version (``Component::updateFromXMLNode``):

* before 30508: ``<connectors><Connector_PhysicalFrame_ name="NAME"><connectee_name>...``;
* before 30510: ``<connector_NAME_connectee_name>``;
* up to 30516: ``<socket_NAME_connectee_name>``;
* from 30517: ``<socket_NAME>``, the only form the rest of the loader reads.

Joints (``Model::updateFromXMLNode``, ``Joint::updateFromXMLNode``): before :data:`JOINTSET_VERSION`
a joint sits in its child ``<Body>``'s ``<Joint>`` and names its parent in ``<parent_body>``
(3.x); before :data:`JOINT_OFFSETS_VERSION` it names its two bodies by the sockets
``parent_body``/``child_body`` (or ``parent_frame``/``child_frame``) and places its frames in them
by ``location_in_parent``, ``orientation_in_parent``, ``location_in_child`` and
``orientation_in_child`` (3.x before :data:`CHILD_LOCATION_VERSION`: ``location`` and
``orientation``), which OpenSim turns into offset frames.

Rounding: OpenSim writes the numbers it converts back into the XML with C++'s default stream
precision (6 significant digits) before reading them, so a joint's frame placement before
:data:`JOINT_OFFSETS_VERSION` (``XMLDocument::addPhysicalOffsetFrame30505_30517``) and a body's
``inertia_xx`` ... ``inertia_yz`` before :data:`INERTIA_VERSION` (``Body::updateFromXMLNode``)
take those rounded values (:func:`opensim_rounded`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

#: the first document version whose joints are in the model's ``<JointSet>``
JOINTSET_VERSION = 30501
#: the first document version whose joints place their frames by offset frames (``<frames>``)
JOINT_OFFSETS_VERSION = 30505
#: the first document version whose child-frame placement is ``location_in_child``/``orientation_in_child``
CHILD_LOCATION_VERSION = 30500
#: the first document version whose body inertia is one ``<inertia>`` (``inertia_xx`` ... before)
INERTIA_VERSION = 30500
#: the first document versions that write ``<connector_NAME_connectee_name>``,
#: ``<socket_NAME_connectee_name>`` and ``<socket_NAME>``
CONNECTEE_NAME_VERSION, SOCKET_CONNECTEE_VERSION, SOCKETS_VERSION = 30508, 30510, 30517

#: the first document version in which OpenSim no longer converts a force's or constraint's
#: ``<isDisabled>`` (to ``appliesForce`` / ``isEnforced``; ``Force::updateFromXMLNode``,
#: ``Constraint::updateFromXMLNode``): from it on the tag is no property, and the element stays active
IS_DISABLED_VERSION = 30509
#: before it, a muscle's ``<min_control>0</min_control>`` is dropped (``Muscle::updateFromXMLNode``)
MIN_CONTROL_VERSION = 30513
#: OpenSim 4.0's documents: a socket holds a component path, resolved from its owner
SOCKET_PATHS_VERSION = 40000

_CONNECTEE_NAME = re.compile(r"socket_(.*)_connectee_name")


def drop_is_disabled(doc, version: int, elements) -> list[str]:
    """Remove the ``<isDisabled>`` of ``elements`` in place where OpenSim 4.6 ignores it (a document
    of ``version`` >= :data:`IS_DISABLED_VERSION`); the removed ones, each as ``"line N <isDisabled>
    in <Tag name='x'> (why)"`` for the loader's warning of elements not used."""
    if version < IS_DISABLED_VERSION:
        return []
    out = []
    for el in elements:
        for c in el.findall("isDisabled"):
            out.append(f"line {doc.lines.get(c, '?')} <isDisabled> in <{el.tag} name={el.get('name')!r}> (OpenSim "
                       f"reads it only in documents older than Version {IS_DISABLED_VERSION}; in this Version "
                       f"{version} document it is ignored and the element stays active: write <appliesForce>false"
                       "</appliesForce> (a force) or <isEnforced>false</isEnforced> (a constraint) to switch it off)")
            el.remove(c)
    return out


def rename_sockets(doc, version: int) -> None:
    """Rewrite every older socket of ``doc`` (a :class:`~mbjax.opensim.model.osim_xml._Doc`) to
    ``<socket_NAME>`` in place, as OpenSim 4.6 does for a document of ``version``; each new
    element keeps the line of the element it replaces."""
    if version >= SOCKETS_VERSION:
        return
    for el in list(doc.root.iter()):
        for child in list(el):
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if tag == "connectors" and version < CONNECTEE_NAME_VERSION:
                at = list(el).index(child)
                el.remove(child)
                for k, connector in enumerate(c for c in child if isinstance(c.tag, str)):
                    new = ET.Element(f"socket_{connector.get('name')}")
                    new.text = connector.findtext("connectee_name")
                    doc.lines[new] = doc.lines.get(connector, doc.lines.get(child))
                    el.insert(at + k, new)
                continue
            if tag.startswith("connector_") and version < SOCKET_CONNECTEE_VERSION:
                tag = child.tag = "socket_" + tag[len("connector_"):]
            m = _CONNECTEE_NAME.fullmatch(tag)
            if m:
                child.tag = f"socket_{m.group(1)}"


def opensim_rounded(values) -> list[float]:
    """``values`` as OpenSim's conversion leaves them: printed to 6 significant digits and read back."""
    return [float(f"{float(v):.6g}") for v in values]
