"""Rigid-body shape templates: the body-frame geometry many particles share (clumps of
spheres, convex polyhedra and polygons), replicated on every rank.

A particle of a template shape keeps the template's index in its `template` field
(pdem.particles.FIELDS); its position is the body's centre of mass and its orientation
takes the template's principal frame to the world (as for ellipsoids), so the mass
properties are the template's per unit density times the material density.

A template is a set of named float64 tables of a fixed width (a clump: "spheres" rows
x, y, z, r; a polyhedron: "vertices" rows x, y, z and more tables of its own). Each name
is stored flat over all templates with row offsets, so a kernel reads the rows of
template k as data[offsets[k]:offsets[k + 1]] of that name's arrays, without Python.
Templates are only ever added (indices stay valid) and travel in checkpoints; every
rank adds the same templates in the same order (the callers check their inputs with
Collective.same).
"""
import json

import numpy as np

from .errors import InputError

PROPS = ("volume", "i1", "i2", "i3", "bound")   # per unit density: volume, principal
                                                # moments; bounding radius about the centre


class ShapeTemplates:
    def __init__(self):
        self.shapes = []            # pdem.particles.SHAPES code of each template
        self.props = np.zeros((0, len(PROPS)))
        self._tables = {}           # name -> list (one per template) of (rows, width) arrays
        self._flat = {}             # name -> (offsets, data), built on demand

    def __len__(self):
        return len(self.shapes)

    def add(self, shape, tables, volume, moments, bound):
        """Register a template; returns its index. tables: {name: (rows, width) array}
        in the principal frame, centred on the centre of mass; moments: the principal
        moments of inertia per unit density; bound: the bounding radius."""
        props = np.array([volume, *moments, bound], dtype=float)
        if props.shape != (len(PROPS),) or not np.all(np.isfinite(props)) or \
                not np.all(props > 0.0):
            raise InputError("shape template: volume, principal moments and bounding radius "
                             "must be finite and > 0, got %s" % props.tolist())
        k = len(self.shapes)
        new = {name: np.ascontiguousarray(rows, dtype=float) for name, rows in tables.items()}
        for name, rows in new.items():
            known = self._tables.get(name)
            if rows.ndim != 2 or (known and rows.shape[1] != known[0].shape[1]):
                raise InputError("shape template table %r must have shape (n, %s), got %s"
                                 % (name, known[0].shape[1] if known else "width",
                                    rows.shape))
            self._tables.setdefault(name, [np.zeros((0, rows.shape[1]))] * k)
        for name, rows_list in self._tables.items():     # a name this template lacks: no rows
            rows_list.append(new[name] if name in new else np.zeros((0, rows_list[0].shape[1])))
        self.shapes.append(int(shape))
        self.props = np.vstack([self.props, props])
        self._flat.clear()
        return k

    def table(self, name):
        """(offsets int64 (n_templates + 1,), data float64 (rows, width)) of `name` over
        all templates (empty for templates without it)."""
        if name not in self._flat:
            rows = self._tables.get(name, [])
            offsets = np.zeros(len(self.shapes) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([len(r) for r in rows]) if rows else 0
            data = np.ascontiguousarray(np.concatenate(rows)) if rows else np.zeros((0, 0))
            self._flat[name] = (offsets, data)
        return self._flat[name]

    def rows(self, name, k):
        """Template k's rows of table `name` (a view)."""
        offsets, data = self.table(name)
        return data[offsets[k]:offsets[k + 1]]

    def save(self, group):
        """Into the checkpoint group `group` (identical on all ranks: h5py mpio writes it
        collectively from every rank's equal copy)."""
        group.attrs["shapes"] = json.dumps(self.shapes)
        group.create_dataset("props", data=self.props)
        for name in self._tables:
            offsets, data = self.table(name)
            group.create_dataset(name + "/offsets", data=offsets)
            group.create_dataset(name + "/data", data=data)

    def load(self, group):
        self.shapes = json.loads(group.attrs["shapes"])
        self.props = group["props"][...]
        self._flat.clear()
        self._tables = {}
        for name in group:
            if name != "props":
                offsets, data = group[name + "/offsets"][...], group[name + "/data"][...]
                self._tables[name] = [data[offsets[k]:offsets[k + 1]]
                                      for k in range(len(self.shapes))]
