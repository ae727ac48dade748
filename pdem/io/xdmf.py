"""XDMF index of a pdem result file, so that ParaView (XDMF reader) opens the
particles directly as a time series.

The .xdmf is light data only: one temporal collection of grids, one grid per
frame, Polyvertex topology (one vertex cell per particle, its connectivity read
from frames/<f>/xdmf/vertex, so that ParaView's default Surface view shows them),
Geometry XYZ read from the frame's position dataset, and every other dataset of
the frame as a node attribute (Scalar, Vector, Tensor for the 9 components of the
ellipsoids' shape tensors, or Matrix for 4-component orientations). Data items point into the .h5 file by a path relative to the
.xdmf, so the two files can be moved together. When contacts are written, a
second temporal collection holds them as force-chain lines (Polyline cells of two
nodes: the centres of the two particles, or the contact point and the particle's
centre for a wall contact) with every contact field and the force magnitude as
cell attributes. A grid with no particles or contacts refers to no dataset (empty
HDF5 datasets upset the legacy reader): no cells, one dummy node.
Frames of several result files (the segments of a restarted run) can be joined in
one index (XdmfIndex.add(frame, h5_path), describe(h5_path)).

The whole file is rewritten (atomically: temporary file then rename) after every
frame, so it is valid even if the run stops; each frame's grids are rendered once.
"""
import os
import xml.etree.ElementTree as ET

import numpy as np

# numpy dtype kind + itemsize -> (NumberType, Precision)
_NUMBER = {("f", 8): ("Float", "8"), ("f", 4): ("Float", "4"), ("i", 8): ("Int", "8"),
           ("i", 4): ("Int", "4"), ("u", 1): ("UChar", "1"), ("i", 1): ("Char", "1"), ("u", 4): ("UInt", "4")}


def _data_item(parent, h5name, path, shape, dtype):
    dt = np.dtype(dtype)
    number, precision = _NUMBER[(dt.kind, dt.itemsize)]
    item = ET.SubElement(parent, "DataItem", Dimensions=" ".join(str(s) for s in shape),
                         NumberType=number, Precision=precision, Format="HDF")
    item.text = "%s:%s" % (h5name, path)
    return item


def _empty_grid(grid, topology):
    """No cells and one dummy node: valid for every XDMF reader (no empty dataset)."""
    ET.SubElement(grid, "Topology", TopologyType=topology, NumberOfElements="0",
                  NodesPerElement="1" if topology == "Polyvertex" else "2")
    geo = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
    item = ET.SubElement(geo, "DataItem", Dimensions="1 3", NumberType="Float", Precision="8",
                         Format="XML")
    item.text = "0 0 0"


def _attributes(grid, h5name, group, datasets, skip, center):
    for field, (shape, dtype) in datasets.items():
        if field in skip:
            continue
        ncomp = shape[1] if len(shape) > 1 else 1
        kind = {1: "Scalar", 3: "Vector", 9: "Tensor"}.get(ncomp, "Matrix")
        att = ET.SubElement(grid, "Attribute", Name=field, AttributeType=kind, Center=center)
        _data_item(att, h5name, "%s/%s" % (group, field), shape, dtype)


def _grid(collection, name, time, h5name, group, n, datasets, geometry, cells=None):
    """One Uniform grid of n points; datasets: {name: (shape, dtype)} under group.
    cells: the path of the (n,) vertex connectivity (None: implicit, older files)."""
    grid = ET.SubElement(collection, "Grid", Name=name, GridType="Uniform")
    ET.SubElement(grid, "Time", Value=repr(float(time)))
    if n == 0:
        _empty_grid(grid, "Polyvertex")
        return
    topo = ET.SubElement(grid, "Topology", TopologyType="Polyvertex", NumberOfElements=str(n),
                         NodesPerElement="1")
    if cells is not None:
        _data_item(topo, h5name, cells, (n,), np.int32)
    geo = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
    shape, dtype = datasets[geometry]
    _data_item(geo, h5name, "%s/%s" % (group, geometry), shape, dtype)
    _attributes(grid, h5name, group, datasets, (geometry,), "Node")


def _chain_grid(collection, name, time, h5name, frame_group, n, datasets, ends_dtype):
    """The contacts of a frame as n line cells (force chains): geometry
    xdmf/contact_ends (2n, 3), connectivity xdmf/contact_lines (n, 2), the contact
    fields and xdmf/force_magnitude as cell attributes."""
    grid = ET.SubElement(collection, "Grid", Name=name, GridType="Uniform")
    ET.SubElement(grid, "Time", Value=repr(float(time)))
    if n == 0:
        _empty_grid(grid, "Polyline")
        return
    topo = ET.SubElement(grid, "Topology", TopologyType="Polyline", NodesPerElement="2",
                         NumberOfElements=str(n))
    _data_item(topo, h5name, frame_group + "/xdmf/contact_lines", (n, 2), np.int32)
    geo = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
    _data_item(geo, h5name, frame_group + "/xdmf/contact_ends", (2 * n, 3), ends_dtype)
    _attributes(grid, h5name, frame_group + "/contacts", datasets, (), "Cell")
    _attributes(grid, h5name, frame_group + "/xdmf", {"force_magnitude": ((n,), np.float64)},
                (), "Cell")


class XdmfIndex:
    """The XDMF file of one result file; each frame's grids are rendered once, so
    rewriting the whole file after every frame stays cheap."""

    def __init__(self, xdmf_path, h5_path):
        self.path = xdmf_path
        self.h5name = self._relative(h5_path)
        self.particles, self.contacts, self.mesh_walls, self.segments = [], [], [], []
        self.bonds, self.cracks, self.members, self.cell = [], [], [], []
        self.polyhedra = []

    def _relative(self, h5_path):
        return os.path.relpath(os.path.abspath(h5_path),
                               os.path.dirname(os.path.abspath(self.path)))

    @staticmethod
    def _text(holder):
        ET.indent(holder, space=" ", level=2)
        return "   " + ET.tostring(holder[0], encoding="unicode").rstrip() + "\n"

    def add(self, frame, h5_path=None):
        """Add a frame: dict with keys name, time, n_particles, particles ({field:
        (shape, dtype)}), cells (True: the frame has its xdmf/ connectivity) and
        optionally n_contacts and contacts (same form), mesh_walls, segments. h5_path:
        the frame's file, when not this index's own (a joined index)."""
        saved = self.h5name
        if h5_path is not None:
            self.h5name = self._relative(h5_path)
        try:
            self._add(frame)
        finally:
            self.h5name = saved

    def _add(self, frame):
        fr = frame["name"]
        cells = frame.get("cells", False)
        holder = ET.Element("Grid")
        _grid(holder, "particles_" + fr, frame["time"], self.h5name,
              "/frames/%s/particles" % fr, frame["n_particles"], frame["particles"], "position",
              "/frames/%s/xdmf/vertex" % fr if cells else None)
        self.particles.append(self._text(holder))
        if "contacts" in frame and cells:
            holder = ET.Element("Grid")
            _chain_grid(holder, "contacts_" + fr, frame["time"], self.h5name, "/frames/" + fr,
                        frame["n_contacts"], frame["contacts"], frame["contact_ends_dtype"])
            self.contacts.append(self._text(holder))
        elif "point" in frame.get("contacts", {}):           # files before force chains
            holder = ET.Element("Grid")
            _grid(holder, "contacts_" + fr, frame["time"], self.h5name,
                  "/frames/%s/contacts" % fr, frame["n_contacts"], frame["contacts"], "point")
            self.contacts.append(self._text(holder))
        if "mesh_walls" in frame:
            self.mesh_walls.append(self._render_mesh("mesh_walls_" + fr, frame["time"],
                                                     "/frames/%s/mesh_walls" % fr,
                                                     frame["mesh_walls"]))
        if "cell" in frame:             # a deforming cell's faces (pdem/cell.py)
            self.cell.append(self._render_mesh("cell_" + fr, frame["time"],
                                               "/frames/%s/cell" % fr, frame["cell"]))
        if frame.get("segments", {}).get("n_segments"):
            self.segments.append(self._render_lines("segments_" + fr, frame["time"],
                                                    "/frames/%s/segments" % fr,
                                                    frame["segments"]["n_segments"]))
        if "bonds" in frame:
            self.bonds.append(self._render_lines("bonds_" + fr, frame["time"],
                                                 "/frames/%s/bonds" % fr,
                                                 frame["bonds"]["n_bonds"]))
            n = frame["bonds"]["n_cracks"]
            holder = ET.Element("Grid")
            _grid(holder, "cracks_" + fr, frame["time"], self.h5name, "/frames/%s/cracks" % fr,
                  n, {"point": ((n, 3), np.float64), "time": ((n,), np.float64),
                      "mode": ((n,), np.int8)}, "point", "/frames/%s/cracks/vertex" % fr)
            self.cracks.append(self._text(holder))
        if "members" in frame:
            self._add_members(frame)
        if "polyhedra" in frame:        # solid polyhedra in their pose (docs/polyhedra.md)
            self.polyhedra.append(self._render_mesh("polyhedra_" + fr, frame["time"],
                                                    "/frames/%s/polyhedra" % fr,
                                                    frame["polyhedra"], ("id", "id", np.int64)))

    def _add_members(self, frame):
        """The member spheres of the clumps (frames/<n>/members) as points."""
        fr, n = frame["name"], frame["members"]["n_members"]
        holder = ET.Element("Grid")
        _grid(holder, "members_" + fr, frame["time"], self.h5name, "/frames/%s/members" % fr,
              n, {"position": ((n, 3), np.float64), "radius": ((n,), np.float64),
                  "id": ((n,), np.int64), "member": ((n,), np.int32)}, "position",
              "/frames/%s/members/vertex" % fr)
        self.members.append(self._text(holder))

    def _render_lines(self, name, time, group, n):
        """Line cells of a frame (boundary segments, bonds): Polyline cells of 2 nodes,
        force per cell."""
        grid = ET.Element("Grid", Name=name, GridType="Uniform")
        ET.SubElement(grid, "Time", Value=repr(float(time)))
        topo = ET.SubElement(grid, "Topology", TopologyType="Polyline", NodesPerElement="2",
                             NumberOfElements=str(n))
        _data_item(topo, self.h5name, group + "/lines", (n, 2), np.int64)
        geo = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
        _data_item(geo, self.h5name, group + "/vertices", (2 * n, 3), np.float64)
        att = ET.SubElement(grid, "Attribute", Name="force", AttributeType="Vector", Center="Cell")
        _data_item(att, self.h5name, group + "/force", (n, 3), np.float64)
        ET.indent(grid, space=" ", level=2)
        return "   " + ET.tostring(grid, encoding="unicode").rstrip() + "\n"

    def _render_mesh(self, name, time, group, size, cell_data=("wall", "facet_wall", np.int32)):
        """A triangle mesh of a frame (faceted walls, the cell's faces, the polyhedra):
        Triangle topology, one attribute per facet (cell_data: its name, dataset, dtype;
        the wall index by default)."""
        grid = ET.Element("Grid", Name=name, GridType="Uniform")
        ET.SubElement(grid, "Time", Value=repr(float(time)))
        nf, nv = size["n_facets"], size["n_vertices"]
        topo = ET.SubElement(grid, "Topology", TopologyType="Triangle", NumberOfElements=str(nf))
        _data_item(topo, self.h5name, group + "/facets", (nf, 3), np.int64)
        geo = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
        _data_item(geo, self.h5name, group + "/vertices", (nv, 3), np.float64)
        att = ET.SubElement(grid, "Attribute", Name=cell_data[0], AttributeType="Scalar",
                            Center="Cell")
        _data_item(att, self.h5name, group + "/" + cell_data[1], (nf,), cell_data[2])
        ET.indent(grid, space=" ", level=2)
        return "   " + ET.tostring(grid, encoding="unicode").rstrip() + "\n"

    def write(self):
        """Write the file atomically (temporary file, then rename)."""
        parts = ['<?xml version="1.0" ?>\n<!DOCTYPE Xdmf SYSTEM "Xdmf.dtd" []>\n'
                 '<Xdmf Version="3.0">\n <Domain>\n']
        for name, grids in (("particles", self.particles), ("contacts", self.contacts),
                            ("mesh_walls", self.mesh_walls), ("segments", self.segments),
                            ("bonds", self.bonds), ("cracks", self.cracks),
                            ("members", self.members), ("cell", self.cell),
                            ("polyhedra", self.polyhedra)):
            if grids or name == "particles":
                parts.append('  <Grid Name="%s" GridType="Collection" CollectionType="Temporal">\n'
                             % name)
                parts.extend(grids)
                parts.append("  </Grid>\n")
        parts.append(" </Domain>\n</Xdmf>\n")
        tmp = self.path + ".tmp"
        with open(tmp, "w") as out:
            out.write("".join(parts))
        os.replace(tmp, self.path)


def describe(h5_path, last_step=None):
    """The frames of a result file as XdmfIndex.add takes them (read serially),
    those after `last_step` left out."""
    import h5py
    frames = []
    with h5py.File(h5_path, "r") as f:
        for name in sorted(f["frames"]):
            g = f["frames"][name]
            step = int(g.attrs["step"])
            if last_step is not None and step > last_step:
                continue
            desc = {"name": name, "time": float(g.attrs["time"]), "step": step,
                    "n_particles": int(g.attrs["n_particles"]), "cells": "xdmf" in g,
                    "particles": {k: (d.shape, d.dtype) for k, d in g["particles"].items()}}
            if "contacts" in g:
                desc["n_contacts"] = int(g.attrs["n_contacts"])
                desc["contacts"] = {k: (d.shape, d.dtype) for k, d in g["contacts"].items()}
                if "xdmf" in g:
                    desc["contact_ends_dtype"] = g["xdmf/contact_ends"].dtype
            if "mesh_walls" in g:
                desc["mesh_walls"] = {"n_vertices": len(g["mesh_walls/vertices"]),
                                      "n_facets": len(g["mesh_walls/facets"])}
            if "cell" in g:
                desc["cell"] = {"n_vertices": len(g["cell/vertices"]),
                                "n_facets": len(g["cell/facets"])}
            if "segments" in g:
                desc["segments"] = {"n_segments": len(g["segments/lines"])}
            if "members" in g:
                desc["members"] = {"n_members": len(g["members/radius"])}
            if "polyhedra" in g:
                desc["polyhedra"] = {"n_vertices": len(g["polyhedra/vertices"]),
                                     "n_facets": len(g["polyhedra/facets"])}
            frames.append(desc)
    return frames


def write_xdmf(xdmf_path, h5_path, frames):
    """Write the XDMF index of `frames` (dicts as in XdmfIndex.add) in one go."""
    index = XdmfIndex(xdmf_path, h5_path)
    for frame in frames:
        index.add(frame)
    index.write()
