"""Editing particles during a run (issue 21 part 4): removal by id or region, new
radius or material, and external loads (a force and torque per particle added every
step). All collective: every rank calls with the same arguments (SPMD)."""
import numpy as np

from . import shapes, validate
from .errors import InputError
from .particles import mass_and_inertia


def ids_array(name, ids):
    ids = np.atleast_1d(np.asarray(ids))
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise InputError("%s: ids must be integers, got %r" % (name, ids[:5].tolist()))
    return ids.astype(np.int64)


def remove(sim, ids=None, region=None):
    """Delete particles by id and/or whose centres are in `region`; returns how many
    (all ranks). Their contacts and bonds go with them; it takes effect at once (a
    rebuild)."""
    sim.collective.same("remove", ids=ids)
    st, n = sim.store, sim.store.n_own
    drop = np.zeros(n, bool)
    if ids is not None:
        ids = ids_array("remove", ids)
        sim._local_index(ids)                       # unknown ids: one line, every rank
        drop |= np.isin(st.id[:n], ids)
    if region is not None:
        if not callable(getattr(region, "evaluate", None)):
            raise InputError("remove: region must be a pdem region (pdem.Box, ...), got %r"
                             % (region,))
        drop |= region(st.pos[:n]) <= 0.0
    count = int(sim.global_sum(int(drop.sum())))
    if count:
        sim.external.forget(st.id[:n][drop], sim)
        sim._rebuild(drop=drop)
        sim._scene_changed()
    return count


def set_radius(sim, ids, radius):
    """New radii (one, or one per id); mass and inertia follow from the material's
    density (particles added with explicit masses keep their density m / V)."""
    sim.collective.same("set_radius", ids=ids, radius=radius)
    ids = ids_array("set_radius", ids)
    r = validate.scalars("radius", radius, len(ids))
    big = np.flatnonzero(2.0 * r > sim.domain.length[:sim.domain.dim].min())
    if len(big):
        raise InputError("set_radius: radius[%d] = %r is larger than the domain"
                         % (big[0], float(r[big[0]])))
    idx, found = sim._local_index(ids, with_found=True)
    shapes.refuse(sim, idx, ("set_radius", "its size is its semi_axes; remove it and add it "
                                           "again"))
    st, dim = sim.store, sim.domain.dim
    old = st.radius[idx]
    density = st.mass[idx] / mass_and_inertia(old, 1.0, dim)[0]
    st.radius[idx] = r[found]
    st.mass[idx], st.inertia[idx] = mass_and_inertia(r[found], density, dim)
    sim._scene_changed()


def set_material(sim, ids, material):
    """A new material; mass and inertia follow from its density."""
    sim.collective.same("set_material", ids=ids, material=material)
    ids = ids_array("set_material", ids)
    mat = sim.materials.get(material)
    idx = sim._local_index(ids)
    st = sim.store
    st.material[idx] = mat.index
    st.mass[idx], st.inertia[idx] = mass_and_inertia(st.radius[idx], mat.density,
                                                     sim.domain.dim)
    shapes.renew(sim, idx, mat.density)           # ellipsoids: from their semi-axes
    sim._scene_changed()


class ExternalLoads:
    """Force and torque per particle added to its contact forces every step, kept as a
    table by id (identical on every rank; checkpointed), so that particles without
    one cost nothing."""

    def __init__(self):
        self.ids = np.zeros(0, np.int64)
        self.force = np.zeros((0, 3))
        self.torque = np.zeros((0, 3))
        self._local = None                          # (owned index, table row), per build

    def __bool__(self):
        return len(self.ids) > 0

    def set(self, sim, ids, force=None, torque=None):
        sim.collective.same("set_external_load", ids=ids, force=force, torque=torque)
        if not sim.scheme.stiffness:
            raise InputError("set_external_load: the %s scheme does not take external loads "
                             "(explicit scheme only)" % type(sim.scheme).__name__)
        ids = ids_array("set_external_load", ids)
        sim._local_index(ids)                       # unknown ids: one line
        n, dim = len(ids), sim.domain.dim
        f = sim._per_id("force", force if force is not None else np.zeros(dim), n, dim)
        t = sim._per_id("torque", torque if torque is not None else np.zeros(3), n, 3)
        if dim == 2:
            f[:, 2] = 0.0
            t[:, :2] = 0.0
        keep = ~np.isin(self.ids, ids)
        zero = ~(np.any(f != 0, axis=1) | np.any(t != 0, axis=1))
        ids, f, t = ids[~zero], f[~zero], t[~zero]
        order = np.argsort(np.concatenate([self.ids[keep], ids]), kind="stable")
        self.ids = np.concatenate([self.ids[keep], ids])[order]
        self.force = np.concatenate([self.force[keep], f])[order]
        self.torque = np.concatenate([self.torque[keep], t])[order]
        self._local = None

    def forget(self, ids, sim):
        """Drop the rows of removed particles (ids of this rank: gathered here)."""
        gone = sim.collective.allgather({"id": np.asarray(ids, np.int64)})["id"]
        keep = ~np.isin(self.ids, gone)
        self.ids, self.force, self.torque = self.ids[keep], self.force[keep], self.torque[keep]
        self._local = None

    def add(self, sim, f, t):
        """f, t += the loads of the owned particles (after the contact sums)."""
        st = sim.store
        if self._local is None or self._local[0] is not st.f["id"]:
            n = st.n_own
            order = np.argsort(st.id[:n], kind="stable")
            at = np.searchsorted(st.id[:n], self.ids, sorter=order)
            at = np.minimum(at, max(n - 1, 0))
            mine = st.id[:n][order[at]] == self.ids if n else np.zeros(len(self.ids), bool)
            self._local = (st.f["id"], order[at[mine]], np.flatnonzero(mine))
        _, idx, rows = self._local
        f[idx] += self.force[rows]
        t[idx] += self.torque[rows]
