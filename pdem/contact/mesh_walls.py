"""Faceted walls of a simulation: triangle meshes (pdem.contact.mesh) with a material,
a contact resolution mode, a cutoff angle and an optional motion (seed 004).

Every rank holds every wall (walls are small next to the particles) and moves them the
same way, so wall geometry is identical on all ranks. The walls are concatenated into
one set of arrays in global numbering (vertices, facets, topology), which the
ball-facet kernel (pyx/facets.pyx) reads; `facet_wall` says which wall a facet is of.
Walls do not interact with walls.
"""
import json
import math

import numpy as np

from ..errors import InputError
from .mesh import Mesh
from .wall_motion import DeformableMotion, RigidMotion, motion_state, restore_motion

MODES = ("reduced", "full")
DEFAULT_CUTOFF_DEGREES = 20.0


class MeshWall:
    """One faceted wall. motion: None (fixed), RigidMotion or DeformableMotion."""

    def __init__(self, mesh, material, mode, cutoff_angle, motion, name):
        self.mesh, self.material, self.mode, self.motion, self.name = mesh, material, mode, motion, name
        self.cutoff_angle = cutoff_angle          # degrees


class MeshWalls:
    def __init__(self):
        self.walls = []
        self._assemble()

    def __len__(self):
        return len(self.walls)

    def __getitem__(self, i):
        return self.walls[i]

    def index(self, wall):
        """The index of a wall given by index or name."""
        names = [w.name for w in self.walls]
        if isinstance(wall, (int, np.integer)) and not isinstance(wall, bool) and \
                0 <= wall < len(names):
            return int(wall)
        if isinstance(wall, str) and wall in names:
            return names.index(wall)
        raise InputError("mesh wall must be an index in 0..%d or one of the names %r, got %r"
                         % (len(names) - 1, names, wall))

    def add(self, mesh, material_index, mode="reduced", cutoff_angle=DEFAULT_CUTOFF_DEGREES,
            velocity=None, angular_velocity=None, reference_point=None,
            vertex_velocities=None, name=None):
        """Add a wall; returns its index. mesh: a Mesh or a file path (STL, OBJ, Gmsh)."""
        if not isinstance(mesh, Mesh):
            mesh = Mesh.read(mesh)
        name = name or mesh.name
        if mode not in MODES:
            raise InputError("add_mesh_wall %r: mode must be one of %r, got %r"
                             % (name, MODES, mode))
        if not (isinstance(cutoff_angle, (int, float)) and 0.0 <= cutoff_angle <= 180.0):
            raise InputError("add_mesh_wall %r: cutoff_angle must be in 0..180 degrees, got %r"
                             % (name, cutoff_angle))
        if len(self.walls) >= 1 << 7:
            raise InputError("add_mesh_wall: at most %d mesh walls" % (1 << 7))
        if self.n_facets + mesh.n_facets >= 1 << 24:
            raise InputError("add_mesh_wall %r: at most %d facets over all mesh walls"
                             % (name, 1 << 24))
        rigid = velocity is not None or angular_velocity is not None or reference_point is not None
        if rigid and vertex_velocities is not None:
            raise InputError("add_mesh_wall %r: wall motion is rigid (velocity, "
                             "angular_velocity, reference_point) or deformable "
                             "(vertex_velocities), not both" % (name,))
        if rigid:
            ref = mesh.vertices.mean(axis=0) if reference_point is None else reference_point
            motion = RigidMotion(mesh, velocity if velocity is not None else (0, 0, 0),
                                 angular_velocity if angular_velocity is not None else (0, 0, 0),
                                 ref)
        elif vertex_velocities is not None:
            motion = DeformableMotion(mesh, vertex_velocities)
        else:
            motion = None
        self.walls.append(MeshWall(mesh, int(material_index), mode, float(cutoff_angle),
                                   motion, name))
        self._assemble()
        return len(self.walls) - 1

    @property
    def n_facets(self):
        return int(self.facet_offset[-1])

    def _assemble(self):
        """Concatenate the walls into global arrays (once per added wall)."""
        meshes = [w.mesh for w in self.walls]
        nv = np.array([m.n_vertices for m in meshes], np.int64)
        nf = np.array([m.n_facets for m in meshes], np.int64)
        ne = np.array([len(m.edges) for m in meshes], np.int64)
        self.vertex_offset = np.r_[0, np.cumsum(nv)].astype(np.int64)
        self.facet_offset = np.r_[0, np.cumsum(nf)].astype(np.int64)
        voff, foff = self.vertex_offset, self.facet_offset
        eoff = np.r_[0, np.cumsum(ne)].astype(np.int64)

        def cat(parts, shape, dtype):
            return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(shape, dtype),
                                        dtype=dtype)

        self.vertices = cat([m.vertices for m in meshes], (0, 3), np.float64)
        self.facets = cat([m.facets + voff[i] for i, m in enumerate(meshes)], (0, 3), np.int64)
        self.normals = cat([m.normals for m in meshes], (0, 3), np.float64)
        self.facet_wall = cat([np.full(m.n_facets, i, np.int32) for i, m in enumerate(meshes)],
                              (0,), np.int32)
        self.facet_edges = cat([m.facet_edges + eoff[i] for i, m in enumerate(meshes)],
                               (0, 3), np.int64)
        self.edge_facets = cat([np.where(m.edge_facets >= 0, m.edge_facets + foff[i], -1)
                                for i, m in enumerate(meshes)], (0, 2), np.int64)
        ptr = [np.zeros(1, np.int64)]
        for i, m in enumerate(meshes):
            ptr.append(m.vertex_facet_ptr[1:] + ptr[-1][-1])
        self.vertex_facet_ptr = cat(ptr, (1,), np.int64)
        self.vertex_facet_idx = cat([m.vertex_facet_idx + foff[i] for i, m in enumerate(meshes)],
                                    (0,), np.int64)
        self.wall_material = np.array([w.material for w in self.walls], np.int32)
        self.wall_cos_theta = np.array([math.cos(math.radians(w.cutoff_angle))
                                        for w in self.walls], np.float64)
        self.wall_full = np.array([w.mode == "full" for w in self.walls], np.int8)
        self.wall_rigid = np.array([not isinstance(w.motion, DeformableMotion)
                                    for w in self.walls], np.int8)
        self.wall_v = np.zeros((len(self.walls), 3))
        self.wall_w = np.zeros((len(self.walls), 3))
        self.wall_ref = np.zeros((len(self.walls), 3))
        self.vertex_vel = np.zeros_like(self.vertices)
        self.update_sides()
        self._sync()
        self.mark_built()

    def update_sides(self):
        """Inactive facet sides (Mesh.set_inactive) as kernel bits: 1 front, 2 back."""
        side = [m.inactive_front.astype(np.int8) | (m.inactive_back.astype(np.int8) << 1)
                for m in (w.mesh for w in self.walls)]
        self.side_off = np.ascontiguousarray(np.concatenate(side) if side else
                                             np.zeros(0, np.int8), dtype=np.int8)

    def _sync(self):
        """Copy the walls' current geometry and velocities into the global arrays."""
        for i, w in enumerate(self.walls):
            v0, v1 = self.vertex_offset[i], self.vertex_offset[i + 1]
            f0, f1 = self.facet_offset[i], self.facet_offset[i + 1]
            self.vertices[v0:v1] = w.mesh.vertices
            self.normals[f0:f1] = w.mesh.normals
            if isinstance(w.motion, RigidMotion):
                self.wall_v[i] = w.motion.velocity
                self.wall_w[i] = w.motion.angular_velocity
                self.wall_ref[i] = w.motion.reference_point
            elif isinstance(w.motion, DeformableMotion):
                self.vertex_vel[v0:v1] = w.motion.vertex_velocities
            else:
                self.wall_ref[i] = w.mesh.vertices.mean(axis=0) if len(w.mesh.vertices) else 0

    @property
    def moving(self):
        return any(w.motion is not None for w in self.walls)

    def move(self, dt):
        """Move every moving wall over one step (t -> t + dt)."""
        if self.moving:
            for w in self.walls:
                if w.motion is not None:
                    w.motion.step(dt)
            self._sync()

    def moved2(self):
        """Largest squared vertex displacement since the last neighbour-list build
        (fixed walls never move: no scan of their vertices)."""
        if not self.moving:
            return 0.0
        d = self.vertices - self._build_vertices
        return float(np.max(np.einsum("ij,ij->i", d, d)))

    def mark_built(self):
        self._build_vertices = self.vertices.copy()

    def local_facets(self, lo, hi, margin):
        """Facets whose bounding box, enlarged by `margin`, overlaps the box lo..hi."""
        if self.n_facets == 0:
            return np.zeros(0, np.int32)
        tri = self.vertices[self.facets]
        ok = np.all((tri.min(axis=1) - margin <= hi) & (tri.max(axis=1) + margin >= lo), axis=1)
        return np.flatnonzero(ok).astype(np.int32)

    def reference_points(self):
        """W_r of each wall (the moment reference: a rigid motion's reference point, the
        vertex centroid of a fixed or deformable wall's current vertices)."""
        ref = self.wall_ref.copy()
        for i, w in enumerate(self.walls):
            if isinstance(w.motion, DeformableMotion):
                ref[i] = w.mesh.vertices.mean(axis=0)
        return ref

    # ------------------------------------------------------------------ checkpoints
    def save(self, group):
        """Write the walls (geometry, flags, motion state, build positions) into an
        HDF5 group: identical on every rank, so the data are written by all alike."""
        group.attrs["walls"] = json.dumps([
            {"name": w.name, "material": w.material, "mode": w.mode,
             "cutoff_angle": w.cutoff_angle,
             "motion": type(w.motion).__name__ if w.motion is not None else None}
            for w in self.walls])
        for i, w in enumerate(self.walls):
            g = group.create_group(str(i))
            m = w.mesh
            v0, v1 = self.vertex_offset[i], self.vertex_offset[i + 1]
            for name, data in (("vertices", m.vertices), ("normals", m.normals),
                               ("areas", m.areas), ("facets", m.facets),
                               ("inactive_front", m.inactive_front),
                               ("inactive_back", m.inactive_back),
                               ("build_vertices", self._build_vertices[v0:v1])):
                g.create_dataset(name, data=data)
            if w.motion is not None:
                mg = g.create_group("motion")
                for name, data in motion_state(w.motion).items():
                    mg.create_dataset(name, data=data)

    def load(self, group):
        """Walls written by `save`, restored bit for bit."""
        motions = {"RigidMotion": RigidMotion, "DeformableMotion": DeformableMotion}
        build = []
        for i, d in enumerate(json.loads(group.attrs["walls"])):
            g = group[str(i)]
            mesh = Mesh(g["vertices"][...], g["facets"][...], check_intersections=False,
                        name=d["name"])
            mesh.normals[...] = g["normals"][...]
            mesh.areas[...] = g["areas"][...]
            mesh.inactive_front[...] = g["inactive_front"][...]
            mesh.inactive_back[...] = g["inactive_back"][...]
            motion = None
            if d["motion"] is not None:
                motion = restore_motion(motions[d["motion"]], mesh,
                                        {k: v[...] for k, v in g["motion"].items()})
            self.walls.append(MeshWall(mesh, d["material"], d["mode"], d["cutoff_angle"],
                                       motion, d["name"]))
            build.append(g["build_vertices"][...])
        self._assemble()
        if build:
            self._build_vertices = np.concatenate(build)
