"""Parallel HDF5 output of a run: ONE file per run holding frames (particles, and
optionally contacts, walls) and a time series of global quantities, plus an XDMF
index beside it (pdem/io/xdmf.py). The layout is documented in docs/output.md.

Every method is collective over sim.comm (every rank calls it, in the same order).
The file is opened with h5py's mpio driver; each rank writes the rows it owns at an
offset given by an Exscan of the local counts, with explicit hyperslab selections
and collective transfers; a rank with nothing to write selects nothing but still
takes part (h5py's high-level `dset[a:b] = x` skips empty writes, which would
hang a collective transfer, so writes go through the low-level API). Rows of a
frame are in rank order, not sorted: the ids are stored with them.
"""
import os
import sys
import time

import h5py
import numpy as np
from h5py import h5fd, h5p, h5s
from mpi4py import MPI

from .. import clumps, validate
from ..contact.kinds import KINDS
from ..errors import InputError
from ..events import Progress
from .xdmf import XdmfIndex, describe

# field -> physical dimension (pdem works in any consistent unit system, e.g. SI)
PARTICLE_FIELDS = {"id": "1", "position": "L", "velocity": "L/T", "angular_velocity": "1/T",
                   "orientation": "1", "radius": "L", "force": "M L/T^2",
                   "torque": "M L^2/T^2", "material": "1", "mass": "M", "shape": "1",
                   "semi_axes": "L", "inertia": "M L^2", "template": "1", "strain": "1",
                   "stress": "M/(L T^2)"}
DEFAULT_FIELDS = ("id", "position", "velocity", "angular_velocity", "orientation", "radius",
                  "force", "torque", "material")
SHAPE_FIELDS = ("shape", "semi_axes", "template")   # added to the defaults with non-spheres
DDA_FIELDS = ("strain", "stress")        # deformable DDA particles only (docs/dda.md)
CONTACT_FIELDS = {"kind": "1", "wall": "1", "id1": "1", "id2": "1", "point": "L", "normal": "1", "force": "M L/T^2",
                  "overlap": "L", "torque": "M L^2/T^2", "u": "L", "phi": "1", "u0": "L",
                  "phi0": "1"}
DEFAULT_CONTACT_FIELDS = ("kind", "wall", "id1", "id2", "point", "normal", "force", "overlap")
KIND_NAMES = [k.name for k in KINDS]        # contacts/kind holds an index into these
SERIES = {"step": (np.int64, "1"), "time": (np.float64, "T"),
          "kinetic_energy": (np.float64, "M L^2/T^2"),
          "rotational_energy": (np.float64, "M L^2/T^2"),
          "gravity_energy": (np.float64, "M L^2/T^2"), "n_particles": (np.int64, "1"),
          "n_contacts": (np.int64, "1"), "solver_sweeps": (np.int64, "1")}
# per-wall series: (rows, n_walls, 3) arrays
WALL_SERIES = {"wall_force": "M L/T^2", "mesh_wall_force": "M L/T^2",
               "mesh_wall_moment": "M L^2/T^2"}
# a deforming cell (pdem/cell.py): (rows, 3, 3) matrices and the work, when the cell
# deforms at the first row
CELL_SERIES = {"cell_matrix": "L", "cell_velocity_gradient": "1/T", "cell_stress": "M/(L T^2)"}
FORMAT = ("pdem-frames", 1)


def kind_codes(kind):
    """int8 index into KIND_NAMES of each contact's kind name."""
    code = np.zeros(len(kind), np.int8)
    for i, name in enumerate(KIND_NAMES):
        code[kind == name] = i
    return code


def contact_ends(sim, c):
    """(2C, 3): the two ends of each contact's force-chain line, rows 2k and 2k + 1:
    the centres of id1 and id2 from the contact point, normal and overlap (x = point
    -+ (r - overlap / 2) normal); a wall contact starts at its contact point. The
    radii come from this rank's particles (owned and ghosts: the contacts it owns)."""
    st = sim.store
    n = len(c["id1"])
    if n == 0:
        return np.zeros((0, 3))
    ids, radius = st.id[:st.n], st.radius[:st.n]
    order = np.argsort(ids, kind="stable")

    def radius_of(wanted):
        at = order[np.minimum(np.searchsorted(ids, wanted, sorter=order), len(ids) - 1)]
        return np.where(ids[at] == wanted, radius[at], 0.0)

    half = 0.5 * c["overlap"]
    r1 = np.where(c["id1"] >= 0, radius_of(c["id1"]) - half, 0.0)
    r2 = radius_of(c["id2"]) - half
    ends = np.empty((n, 2, 3))
    ends[:, 0] = c["point"] - r1[:, None] * c["normal"]
    ends[:, 1] = c["point"] + r2[:, None] * c["normal"]
    return ends.reshape(-1, 3)


def _choose(what, given, allowed, default):
    """Validated tuple of field names (InputError names the bad one and the allowed)."""
    if given is None or given is True:
        return tuple(default)
    if isinstance(given, str):
        given = [given]
    names = list(dict.fromkeys(given))
    for name in names:
        if name not in allowed:
            raise InputError("%s: unknown field %r (allowed: %s)"
                             % (what, name, ", ".join(allowed)))
    return tuple(names)


def _positive_int(name, value):
    if value is not None and not (isinstance(value, (int, np.integer)) and value > 0):
        raise InputError("%s must be a positive integer (steps) or None, got %r" % (name, value))
    return value



def collective_transfer(collective=True):
    """Dataset transfer property list for MPI-IO (collective or independent)."""
    dxpl = h5p.create(h5p.DATASET_XFER)
    dxpl.set_dxpl_mpio(h5fd.MPIO_COLLECTIVE if collective else h5fd.MPIO_INDEPENDENT)
    return dxpl


def row_offsets(comm, counts):
    """(start, total) per entry of `counts` (this rank's row counts): where this
    rank's rows begin in a dataset of all ranks' rows, in rank order, and its length."""
    local = np.asarray(counts, np.int64)
    start, total = np.zeros_like(local), local.copy()
    if comm.size > 1:
        comm.Exscan(local, start, op=MPI.SUM)
        if comm.rank == 0:
            start[:] = 0                   # Exscan leaves rank 0's buffer undefined
        comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    return start.tolist(), total.tolist()


def write_slab(dset, start, rows, dxpl):
    """Write rows at [start, start + len(rows)) of dset's first axis. A rank with no
    rows still takes part in a collective transfer, with an empty selection (h5py's
    `dset[a:b] = x` skips empty writes, which would leave the other ranks waiting)."""
    fspace = dset.id.get_space()
    if rows.size:
        fspace.select_hyperslab((start,) + (0,) * (rows.ndim - 1), rows.shape)
        mspace = h5s.create_simple(rows.shape)
    else:
        fspace.select_none()
        rows = np.zeros(1, rows.dtype)
        mspace = h5s.create_simple((1,))
        mspace.select_none()
    dset.id.write(mspace, fspace, np.ascontiguousarray(rows), dxpl=dxpl)


def shape_tensors(q, a):
    """(n, 9) row-major R(q) diag(a) R(q)^T of unit quaternions q (w, x, y, z)."""
    w, x, y, z = q.T
    R = np.stack([np.column_stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
                  np.column_stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
                  np.column_stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])],
                 axis=1)
    return np.einsum("nik,nk,njk->nij", R, a, R).reshape(-1, 9)


class ResultFile:
    """HDF5 result file of `sim` at `path` (collective; created, or truncated).

    fields: particle fields of each frame (default DEFAULT_FIELDS; allowed:
    PARTICLE_FIELDS; 'id' is always written). contacts: False, True (the
    DEFAULT_CONTACT_FIELDS) or a list of CONTACT_FIELDS. float32_positions: store
    particle positions and contact points as float32. every / series_every: step
    intervals at which `run` writes a frame / a series row (series_every defaults
    to every). collective: collective MPI-IO transfers (False: independent ones,
    faster on some local file systems). series_buffer: rows of the time series kept
    in memory before they are written (also written at each frame and at close).
    series_extra: {name: function(sim) -> float}, further scalars of the series
    (called on every rank at each row, collective calls allowed; e.g. the mass
    discharged from a hopper). The XDMF index is written beside the file as <path without .h5>.xdmf.
    joined: (xdmf path, [earlier result files]): a second XDMF index holding the frames
    of the earlier files (the segments of a restarted run; frames after this file's
    first step left out) followed by this file's (pdem run writes results-all.xdmf).
    """

    def __init__(self, path, sim, fields=None, contacts=False, float32_positions=False,
                 every=None, series_every=None, collective=True, series_buffer=64,
                 series_extra=None, joined=None):
        self.fields = _choose("fields", fields, list(PARTICLE_FIELDS),
                              DEFAULT_FIELDS + (SHAPE_FIELDS if sim.shapes else ()))
        if "id" not in self.fields:
            self.fields = ("id",) + self.fields
        for f in DDA_FIELDS:
            if f in self.fields and f not in sim.store.f:
                raise InputError("fields: %r is a field of deformable DDA particles "
                                 "(pdem.DDA(rigid=False)), not of this run" % f)
        self.contact_fields = () if contacts is False or contacts is None else _choose(
            "contacts", contacts, list(CONTACT_FIELDS), DEFAULT_CONTACT_FIELDS)
        self.every = _positive_int("every", every)
        self.series_every = _positive_int("series_every", series_every) or self.every
        self.series_buffer = _positive_int("series_buffer", series_buffer)
        self.series_extra = dict(series_extra or {})
        for name, fn in self.series_extra.items():
            if name in SERIES or name in WALL_SERIES or not callable(fn):
                raise InputError("series_extra: %r must be a new name mapped to a function "
                                 "of the simulation, got %r" % (name, fn))
        self.sim, self.comm = sim, sim.comm
        self.float32 = bool(float32_positions)
        self.path = os.fspath(path)
        self.xdmf_path = os.path.splitext(self.path)[0] + ".xdmf"
        self.frames = []                 # light description of each frame
        self.xdmf = XdmfIndex(self.xdmf_path, self.path) if self.comm.rank == 0 else None
        self.joined = None
        if joined is not None and self.comm.rank == 0:
            self.joined = XdmfIndex(os.fspath(joined[0]), self.path)
            self._join(joined[1], sim.step_count)
        self.n_series = 0                # rows of the series in the file
        self._pending = []               # rows not written yet: (scalars, wall arrays)
        self._walls = None               # rows of each wall array of the series
        clock = time.perf_counter()
        folder = os.path.dirname(os.path.abspath(self.path))
        problem = None
        if self.comm.rank == 0 and not os.path.isdir(folder):
            problem = "ResultFile: the folder %s of %s does not exist" % (folder, self.path)
        elif self.comm.rank == 0 and not os.access(folder, os.W_OK):
            problem = "ResultFile: the folder %s of %s is not writable" % (folder, self.path)
        sim.collective.raise_if_any(problem, InputError)
        if not (h5py.get_config().mpi or self.comm.size == 1):
            raise InputError("ResultFile on %d ranks needs h5py built with MPI (parallel HDF5)"
                             % self.comm.size)
        try:
            if h5py.get_config().mpi:
                self.h5 = h5py.File(self.path, "w", driver="mpio", comm=self.comm)
                self._dxpl = collective_transfer(collective)
            else:
                self.h5, self._dxpl = h5py.File(self.path, "w"), None
        except OSError as exc:
            raise InputError("ResultFile: cannot create %s: %s"
                             % (self.path, str(exc).replace("\n", " "))) from None
        a = self.h5.attrs
        a["format"], a["format_version"] = FORMAT
        a["dim"] = sim.domain.dim
        a["domain_lo"], a["domain_hi"] = sim.domain.lo, sim.domain.hi
        a["periodic"] = np.array(sim.domain.periodic, np.uint8)
        a["dt"] = sim.dt
        a["n_ranks"] = self.comm.size
        self.h5.create_group("frames")
        self._tick(clock)

    def _join(self, earlier, start):
        """Frames of the earlier segments (rank 0): each up to the next one's start."""
        parts = []
        for path in earlier:
            try:
                frames = describe(path, start)
            except (OSError, KeyError, ValueError):        # a damaged segment: left out
                continue
            if frames:
                parts.append((frames[0]["step"], path, frames))
        parts.sort(key=lambda part: part[0])
        for k, (_, path, frames) in enumerate(parts):
            end = parts[k + 1][0] if k + 1 < len(parts) else start
            for frame in frames:
                if frame["step"] < end or (k + 1 == len(parts) and frame["step"] <= end):
                    self.joined.add(frame, path)

    # ------------------------------------------------------------------ writing
    def _check_open(self, what):
        if self.h5 is None:
            raise InputError("%s: the result file %s is closed" % (what, self.path))

    def _tick(self, clock):
        self.sim.timers["output"] += time.perf_counter() - clock

    def _rows(self, group, name, rows, start, total, unit):
        """Create dataset group/name with `total` rows (collective) and write this
        rank's `rows` at row `start` (collective transfer; zero rows: empty selection)."""
        rows = np.ascontiguousarray(rows)
        dset = group.create_dataset(name, (total,) + rows.shape[1:], dtype=rows.dtype)
        dset.attrs["unit"] = unit
        if total:
            self._write(dset, start, rows)
        return dset

    def _write(self, dset, start, rows):
        write_slab(dset, start, rows, self._dxpl)

    def write_frame(self):
        """Write one frame of the current state (collective). Returns its name."""
        self._check_open("write_frame")
        sim, clock = self.sim, time.perf_counter()
        wall_force = sim.plane_forces()
        mesh_loads = sim.mesh_wall_forces()
        segment_force, point_force = sim.segment_forces(), sim.point_forces()
        self._flush_series()
        p = sim.particles()
        c = sim.contacts() if self.contact_fields else {"id1": np.empty(0)}
        (p0, c0), (np_, nc) = row_offsets(self.comm, [len(p["id"]), len(c["id1"])])
        name = "%06d" % len(self.frames)
        g = self.h5.create_group("frames/" + name)
        g.attrs["step"], g.attrs["time"] = sim.step_count, sim.time
        g.attrs["n_particles"] = np_
        desc = {"name": name, "time": sim.time, "step": sim.step_count, "n_particles": np_,
                "particles": {}, "cells": True}
        pg = g.create_group("particles")
        for f in self.fields:
            rows = p[f].astype(np.float32) if (f == "position" and self.float32) else p[f]
            d = self._rows(pg, f, rows, p0, np_, PARTICLE_FIELDS[f])
            desc["particles"][f] = (d.shape, d.dtype)
        if sim.shapes and "semi_axes" in self.fields and "orientation" in self.fields:
            # R diag(a) R^T: eigenvectors the body axes, eigenvalues the semi-axes
            # (ParaView's Tensor Glyph draws the ellipsoids: docs/ellipsoid_glyphs.py)
            d = self._rows(pg, "shape_tensor", shape_tensors(p["orientation"], p["semi_axes"]),
                           p0, np_, "L")
            desc["particles"]["shape_tensor"] = (d.shape, d.dtype)
        if self.contact_fields:
            g.attrs["n_contacts"] = nc
            desc["n_contacts"], desc["contacts"] = nc, {}
            cg = g.create_group("contacts")
            for f in self.contact_fields:
                rows = c[f].astype(np.float32) if (f == "point" and self.float32) else c[f]
                d = self._rows(cg, f, kind_codes(rows) if f == "kind" else rows, c0, nc,
                               CONTACT_FIELDS[f])
                if f == "kind":
                    d.attrs["names"] = KIND_NAMES
                desc["contacts"][f] = (d.shape, d.dtype)
        # what ParaView needs to draw them (docs/output.md): one vertex cell per
        # particle, each contact a line between the particle centres (force chains)
        xg = g.create_group("xdmf")
        self._rows(xg, "vertex", np.arange(p0, p0 + len(p["id"]), dtype=np.int32), p0, np_, "1")
        if self.contact_fields:
            ends = contact_ends(sim, c)
            ends = ends.astype(np.float32) if self.float32 else ends
            self._rows(xg, "contact_ends", ends, 2 * c0, 2 * nc, "L")
            lines = np.arange(2 * c0, 2 * (c0 + len(c["id1"])), dtype=np.int32).reshape(-1, 2)
            self._rows(xg, "contact_lines", lines, c0, nc, "1")
            self._rows(xg, "force_magnitude", np.linalg.norm(c["force"], axis=1), c0, nc,
                       "M L/T^2")
            desc["contact_ends_dtype"] = ends.dtype
        planes, root = sim.planes, self.comm.rank == 0
        wg = g.create_group("walls")
        for f, rows, unit in (("point", planes.point, "L"), ("normal", planes.normal, "1"),
                              ("velocity", planes.vel, "L/T"), ("force", wall_force, "M L/T^2")):
            # identical on every rank: rank 0 writes, the others select nothing
            self._rows(wg, f, rows if root else rows[:0], 0, len(planes), unit)
        if sim.cell.deforming:          # the cell's faces (pdem/cell.py), as a mesh
            vertices, facets = sim.cell.surface()
            cg = g.create_group("cell")
            for f, rows, unit in (("vertices", vertices, "L"), ("facets", facets, "1"),
                                  ("facet_wall", np.zeros(len(facets), np.int32), "1")):
                self._rows(cg, f, rows if root else rows[:0], 0, len(rows), unit)
            desc["cell"] = {"n_vertices": len(vertices), "n_facets": len(facets)}
        mw = sim.mesh_walls
        if len(mw):
            mg = g.create_group("mesh_walls")
            for f, rows, unit in (("vertices", mw.vertices, "L"), ("facets", mw.facets, "1"),
                                  ("facet_wall", mw.facet_wall, "1"),
                                  ("force", mesh_loads["force"], "M L/T^2"),
                                  ("moment", mesh_loads["moment"], "M L^2/T^2")):
                self._rows(mg, f, rows if root else rows[:0], 0, len(rows), unit)
            desc["mesh_walls"] = {"n_vertices": len(mw.vertices), "n_facets": mw.n_facets}
        sg, pts = sim.segments, sim.points
        if len(sg) or len(pts):
            # segments as line cells (ends 2k, 2k + 1) for ParaView; points with their loads
            gg = g.create_group("segments")
            ends = np.stack([sg.a, sg.b], axis=1).reshape(-1, 3)
            lines = np.arange(len(ends), dtype=np.int64).reshape(-1, 2)
            for grp, f, rows, unit in ((gg, "vertices", ends, "L"), (gg, "lines", lines, "1"),
                                       (gg, "force", segment_force, "M L/T^2"),
                                       (gg, "points", pts.a, "L"),
                                       (gg, "point_force", point_force, "M L/T^2")):
                self._rows(grp, f, rows if root else rows[:0], 0, len(rows), unit)
            desc["segments"] = {"n_segments": len(sg)}
        if sim.interactions["bond"].any:
            desc["bonds"] = self._write_bonds(g, sim.bonds())
        if clumps.SHAPE in sim.templates.shapes:
            desc["members"] = self._write_members(g, sim)
        if sim.polyhedra:
            desc["polyhedra"] = self._write_polyhedra(g, sim)
        self.h5.attrs["n_frames"] = len(self.frames) + 1
        self.h5.attrs["material_names"] = [m.name for m in sim.materials.materials] or [""]
        self.h5.flush()
        self.frames.append(desc)
        if root:
            self.xdmf.add(desc)
            self.xdmf.write()
            if self.joined is not None:
                self.joined.add(desc)
                self.joined.write()
        self._tick(clock)
        return name

    def _write_bonds(self, g, b):
        """Intact bonds as line cells (bonds/vertices: the two ends of each, lines, force
        on id2 in the bond's local axes, ids) and breaks as points (cracks/point, time,
        mode: 1 tension, 2 shear; vertex: their cells), each rank's rows at its offset
        (collective)."""
        intact = np.flatnonzero(b["intact"])
        broken = np.flatnonzero(~b["intact"])
        (b0, c0), (nb, nc) = row_offsets(self.comm, [len(intact), len(broken)])
        bg, cg = g.create_group("bonds"), g.create_group("cracks")
        lines = (2 * (b0 + np.arange(len(intact), dtype=np.int64)))[:, None] + [0, 1]
        for grp, f, rows, start, total, unit in (
                (bg, "vertices", b["ends"][intact].reshape(-1, 3), 2 * b0, 2 * nb, "L"),
                (bg, "lines", lines, b0, nb, "1"),
                (bg, "force", b["force"][intact], b0, nb, "M L/T^2"),
                (bg, "id1", b["id1"][intact], b0, nb, "1"),
                (bg, "id2", b["id2"][intact], b0, nb, "1"),
                (cg, "point", b["point"][broken], c0, nc, "L"),
                (cg, "time", b["broken_time"][broken], c0, nc, "T"),
                (cg, "mode", b["mode"][broken], c0, nc, "1"),
                (cg, "vertex", c0 + np.arange(len(broken), dtype=np.int32), c0, nc, "1")):
            self._rows(grp, f, rows, start, total, unit)
        return {"n_bonds": nb, "n_cracks": nc}

    def _write_members(self, g, sim):
        """The member spheres of the clumps as points (members/position, radius, the
        clump's id, the member's index; vertex: their cells), each rank's rows at its
        offset (collective; ParaView: a Point Gaussian or Glyph by radius, docs/clumps.md)."""
        centres, radii, ids, member = clumps.members(sim.store, sim.store.n_own, sim.templates)
        order = np.lexsort((member, ids))
        (m0,), (nm,) = row_offsets(self.comm, [len(ids)])
        mg = g.create_group("members")
        for f, rows, unit in (("position", centres[order], "L"), ("radius", radii[order], "L"),
                              ("id", ids[order], "1"), ("member", member[order], "1"),
                              ("vertex", m0 + np.arange(len(ids), dtype=np.int32), "1")):
            self._rows(mg, f, rows, m0, nm, unit)
        return {"n_members": nm}

    def _write_polyhedra(self, g, sim):
        """The polyhedra (and 2D polygons: their contact prisms) in their current pose as
        one triangle mesh (polyhedra/vertices: centroid + R(q) v_body, facets: indices
        into the frame's vertices, id: the particle of each facet), each rank's rows at
        its offset (collective; ParaView: the XDMF grid "polyhedra", docs/polyhedra.md)."""
        from ..polyhedra import world_mesh
        pts, tris, ids = world_mesh(sim)
        (v0, f0), (nv, nf) = row_offsets(self.comm, [len(pts), len(tris)])
        pg = g.create_group("polyhedra")
        for f, rows, start, total, unit in (("vertices", pts, v0, nv, "L"),
                                            ("facets", tris + v0, f0, nf, "1"),
                                            ("id", ids.astype(np.int64), f0, nf, "1")):
            self._rows(pg, f, rows, start, total, unit)
        return {"n_vertices": nv, "n_facets": nf}

    def write_series(self):
        """Append one row of global quantities to the time series (collective). Rows
        reach the file by series_buffer, at each frame and at close."""
        self._check_open("write_series")
        sim, clock = self.sim, time.perf_counter()
        e = sim.energy()
        values = {"step": sim.step_count, "time": sim.time, "kinetic_energy": e["kinetic"],
                  "rotational_energy": e["rotational"], "gravity_energy": e["gravity"],
                  "n_particles": sim.n_particles, "n_contacts": sim.n_contacts,
                  "solver_sweeps": sim.scheme.stats().get("solver_sweeps", 0)}
        for name, fn in self.series_extra.items():
            values[name] = float(fn(sim))
        loads = sim.mesh_wall_forces()
        arrays = {"wall_force": sim.plane_forces(), "mesh_wall_force": loads["force"],
                  "mesh_wall_moment": loads["moment"]}
        if sim.cell.deforming:
            cell = sim.cell
            arrays.update(cell_matrix=cell.matrix, cell_velocity_gradient=cell.velocity_gradient,
                          cell_stress=cell.last_stress if cell.last_stress is not None
                          else sim.stress())
            values["cell_work"] = cell.work
        walls = {k: len(v) for k, v in arrays.items()}
        if self._walls is None:
            self._walls = walls
        elif (set(walls) - set(self._walls) == set(CELL_SERIES)
              and all(walls[k] == n for k, n in self._walls.items())):
            self._add_cell_series(walls)        # the cell began to deform after row 0
        elif self._walls != walls:
            raise InputError("write_series: the number of walls changed from %r to %r; the "
                             "series of a file keeps one set of walls" % (self._walls, walls))
        self._pending.append((values, arrays))
        if len(self._pending) >= self.series_buffer:
            self._flush_series()
        self._tick(clock)

    def _add_cell_series(self, walls):
        """The cell began to deform after the first rows: its series start now, the rows
        before hold the fixed box (H = diag(lengths), L = 0, work 0; the stress was not
        computed then: NaN). Collective."""
        self._flush_series()
        self._walls = walls
        if "series" not in self.h5:
            return
        n = self.n_series
        before = {"cell_matrix": np.diag(self.sim.cell.length0),
                  "cell_velocity_gradient": np.zeros((3, 3)),
                  "cell_stress": np.full((3, 3), np.nan)}
        s = self.h5["series"]
        s.create_dataset("cell_work", (n,), dtype=np.float64, maxshape=(None,), chunks=(1024,))
        s["cell_work"].attrs["unit"] = "M L^2/T^2"
        self._write(s["cell_work"], 0, np.zeros(n if self.comm.rank == 0 else 0))
        for name, value in before.items():
            self._series_dataset(s, name, 3, n)
            self._write(s[name], 0, np.tile(value, (n if self.comm.rank == 0 else 0, 1, 1)))

    def _series_dataset(self, s, name, width, rows=0):
        """A (rows, width, 3) series dataset of the walls or the cell, extensible."""
        s.create_dataset(name, (rows, width, 3), dtype=np.float64, maxshape=(None, None, 3),
                         chunks=(max(1, 1024 // max(1, width)), max(1, width), 3))
        s[name].attrs["unit"] = dict(WALL_SERIES, **CELL_SERIES)[name]

    def _flush_series(self):
        """Write the pending rows (collective: every rank has the same pending rows;
        rank 0 writes them, the others select nothing)."""
        if not self._pending:
            return
        scalars = dict(SERIES, **{k: (np.float64, "") for k in self.series_extra})
        if "cell_matrix" in self._walls:
            scalars["cell_work"] = (np.float64, "M L^2/T^2")
        if "series" not in self.h5:
            s = self.h5.create_group("series")
            for name, (dtype, unit) in scalars.items():
                s.create_dataset(name, (0,), dtype=dtype, maxshape=(None,), chunks=(1024,))
                s[name].attrs["unit"] = unit
            for name in self._walls:     # chunks must not be empty: no walls is legal
                self._series_dataset(s, name, self._walls[name])
        s, row, root = self.h5["series"], self.n_series, self.comm.rank == 0
        rows = self._pending if root else []
        total = row + len(self._pending)
        for name, (dtype, _) in scalars.items():
            s[name].resize((total,))                      # collective
            self._write(s[name], row, np.array([v[name] for v, _ in rows], dtype))
        for name in self._walls:
            s[name].resize((total, self._walls[name], 3))
            data = (np.stack([w[name] for _, w in rows]) if rows
                    else np.zeros((0, self._walls[name], 3)))
            self._write(s[name], row, data)
        self.n_series = total
        self.h5.attrs["n_series"] = total
        self._pending = []

    def run(self, steps=None, until=None, progress=None):
        """sim.run(steps=..., until=..., progress=...) that writes a frame every `every`
        steps and a series row every `series_every` steps (of sim.step_count)."""
        sim = self.sim
        n = validate.steps_to_run(steps, until, sim.time, sim.dt)
        end = sim.step_count + n
        periods = [e for e in (self.every, self.series_every) if e]
        show = Progress(sim, n) if progress or (progress is None and sim.rank == 0 and
                                                sys.stdout.isatty()) else None
        while sim.step_count < end:
            now = sim.step_count
            sim.run(steps=min([end] + [now + e - now % e for e in periods]) - now,
                    progress=False)
            if show:
                show.update()
            written = (self.every and sim.step_count % self.every == 0,
                       self.series_every and sim.step_count % self.series_every == 0)
            if written[0] or (sim.stopped and self.every):
                self.write_frame()
            if written[1] or (sim.stopped and self.series_every):
                self.write_series()
            if sim.stopped:                     # an event's sim.stop(): the state of its step
                break
        if show:
            show.close()

    # ------------------------------------------------------------------ closing
    def close(self):
        """Close the file (collective); the XDMF index is already up to date."""
        if self.h5 is not None:
            clock = time.perf_counter()
            self._flush_series()
            self.h5.close()
            self.h5 = None
            self._tick(clock)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
