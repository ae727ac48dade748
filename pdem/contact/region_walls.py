"""Region walls: a level-set region Omega: f(x) <= 0 (pdem.regions) as a container
whose particles stay inside, through the contact law (seed 002, "静力弛豫“接触模型”").

Seed 002's static relaxation moves a particle that sticks out of Omega back in by
dx = -delta n, delta = (1 + |d0| / (d0 - d1)) r, n = grad f / |grad f| at the centre x0,
d0 = f(x0), d1 = f(x0 - sign(d0) r n). In a Simulation the same quantities define a
contact instead of a jump: delta is the overlap (f(x0) + r for a signed distance) and
-n the normal, i.e. at every step each row is the plane wall tangent to the boundary
where the rule would put the particle (pyx/levelset.pyx `wall_planes`), handed to the
plane law (pyx/contacts.pyx `sphere_plane`): L6Geom, the material pair's law, friction
history, energy and the loads on the wall are those of a plane wall. A particle whose
centre leaves Omega has an overlap above its radius (stopped by max_overlap).

Verlet list: at a rebuild, the owned particles with f(x) + r > -skin, one row per
(particle, wall), key particle id << 32 | wall, sorted by key. This is complete when
|f| never exceeds the distance to the boundary (Region.distance_bound): a particle
moving at most skin/2 cannot then reach the boundary from outside the list.
Regions are evaluated point by point (pdem.regions), so any number of ranks and
threads give the same bits. Walls are fixed (no velocity). Checkpoints keep the
regions pickled (`region_walls/<i>`).
"""
import pickle

import numpy as np

from .._kernels import levelset as lk
from ..errors import InputError
from . import keys
from .kinds import TangentPlaneContacts, register
from .store import ContactBatch


class RegionWalls:
    """The level-set walls of a Simulation: regions and materials (every rank)."""

    def __init__(self):
        self.regions = []
        self.material = np.zeros(0, np.int32)

    def __len__(self):
        return len(self.regions)

    def add(self, region, material_index):
        from ..regions import Region
        if not isinstance(region, Region):
            raise InputError("add_region_wall: region must be a pdem region (pdem.Sphere, "
                             "pdem.MeshRegion, ...), got %r" % (region,))
        if not region.distance_bound:
            raise InputError("add_region_wall: region %r is not a distance bound (|f| may "
                             "exceed the distance to its boundary: a FunctionRegion without "
                             "exact=True, or a non-uniform scale); the wall's neighbour list "
                             "needs one" % (region,))
        self.regions.append(region)
        self.material = np.append(self.material, np.int32(material_index))
        return len(self) - 1

    def save(self, group):
        """Pickled regions and the materials (identical on all ranks)."""
        group.create_dataset("material", data=self.material)
        for i, region in enumerate(self.regions):
            try:
                blob = pickle.dumps(region, protocol=4)
            except Exception as exc:
                raise InputError("checkpoint: region wall %d (%r) cannot be pickled (%s): "
                                 "define a FunctionRegion's f and grad at module level"
                                 % (i, region, exc)) from None
            group.create_dataset(str(i), data=np.frombuffer(blob, np.uint8))

    def load(self, group):
        self.material = np.asarray(group["material"][...], np.int32)
        self.regions = [pickle.loads(group[str(i)][...].tobytes())
                        for i in range(len(self.material))]


@register
class RegionWallContacts(TangentPlaneContacts):
    """Owned particles within the skin of a region wall (Simulation.add_region_wall)."""
    name = "region"
    label = "region wall"

    def n_elements(self):
        return len(self.sim.region_walls)

    def build(self, b):
        sim = self.sim
        st, rw = sim.store, sim.region_walls
        n = b.n_own
        parts_p, parts_w = [], []
        for w, region in enumerate(rw.regions):
            f = region(st.pos[:n])
            p = np.flatnonzero(f + st.radius[:n] > -b.skin).astype(np.int32)
            parts_p.append(p)
            parts_w.append(np.full(len(p), w, np.int32))
        p = np.concatenate(parts_p) if parts_p else np.zeros(0, np.int32)
        w = np.concatenate(parts_w) if parts_w else np.zeros(0, np.int32)
        key = keys.make(st.id[p], w)
        order = np.argsort(key, kind="stable")
        rows = ContactBatch(p[order], w[order], key[order])
        rows.carry_from(self.batch)
        self.batch = rows

    def planes(self):
        """Per row: the plane of seed 002's rule at the current positions (point,
        inward normal) and the gap (pyx/levelset.pyx wall_planes)."""
        sim, b = self.sim, self.batch
        st = sim.store
        m = len(b)
        x = np.ascontiguousarray(st.pos[b.i1])
        r = np.ascontiguousarray(st.radius[b.i1])
        d0, grad = np.empty(m), np.empty((m, 3))
        for w, region in enumerate(sim.region_walls.regions):
            k = np.flatnonzero(b.i2 == w)
            if len(k):
                d0[k], grad[k] = region.evaluate(x[k])
        probe, normal = np.empty((m, 3)), np.empty((m, 3))
        lk.relax_probes(x, r, d0, grad, probe, normal, sim.threads)
        d1 = np.empty(m)
        for w, region in enumerate(sim.region_walls.regions):
            k = np.flatnonzero(b.i2 == w)
            if len(k):
                d1[k] = region(probe[k])
        point, inward, gap = np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
        lk.wall_planes(x, r, d0, d1, normal, point, inward, gap, sim.threads)
        return point, inward, gap

    def element_materials(self, element):
        return self.sim.region_walls.material[element]
