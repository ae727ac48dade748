"""Insertion during a run (issue 21 part 1; LIGGGHTS `fix insert/stream` and
`insert/pour`): particles poured into a region at a number or mass rate, with a size
distribution (pdem/sizes.py), an initial velocity and overlap rejection against
existing particles, planes and mesh walls.

Every `every` steps (an event, pdem/events.py) a batch tops the inserted number (or
mass) up to rate x (t - start), capped by `count`. A batch draws its radii and
candidate centres (uniform in the region's bounds, kept where the sphere fits in the
region) from a generator seeded by (seed, batch number), identical on every rank;
each rank tests the candidates against the particles it owns (pyx/insertion.pyx), the
answers are combined over ranks, then the candidates are accepted in order when clear
of each other. So the inserted particles are the same on any number of ranks. What
does not fit is carried over to the next batch (`sim.insertions[name].deficit`).

State (batches done, number and mass inserted) is kept in checkpoints by name: after
`pdem.restart`, register the insertion again with the same arguments and it goes on
as if uninterrupted."""
import numpy as np

from . import validate
from ._kernels import insertion as _k
from ._kernels import levelset as _ls
from .errors import InputError
from .particles import mass_and_inertia

TRIES = 20          # candidates drawn per particle wanted


class Insertion:
    def __init__(self, sim, name, region, material, radii, rate, mass_rate, count, velocity,
                 every, seed):
        if (rate is None) == (mass_rate is None):
            raise InputError("add_insertion %r: give rate (particles per time) or mass_rate, "
                             "got rate=%r, mass_rate=%r" % (name, rate, mass_rate))
        if getattr(region, "bounds", None) is None:
            raise InputError("add_insertion %r: region must be a bounded pdem region, got %r"
                             % (name, region))
        self.sim, self.name, self.region = sim, name, region
        self.material = sim.materials.get(material)
        self.radii = radii if callable(radii) else float(validate.positive("radii", radii))
        self.rate = None if rate is None else validate.positive("rate", rate)
        self.mass_rate = None if mass_rate is None else validate.positive("mass_rate", mass_rate)
        self.count = np.inf if count is None else validate.integer("count", count)
        self.velocity = validate.vector("velocity", velocity)
        self.every, self.seed = validate.integer("every", every), validate.integer("seed", seed, 0)
        self.state = {"start": sim.time, "batches": 0, "number": 0, "mass": 0.0}
        self.deficit = 0

    def _draw_radii(self, rng, n):
        if callable(self.radii):
            return validate.scalars("radii (drawn)", np.asarray(self.radii(rng, n), float), n)
        return np.full(n, self.radii)

    def _wanted(self, rng):
        """Radii of this batch: up to the number (or mass) due by now."""
        sim, st = self.sim, self.state
        elapsed = sim.time - st["start"]
        room = self.count - st["number"]
        if self.rate is not None:
            n = int(min(np.floor(self.rate * elapsed + 1e-9) - st["number"], room))
            return self._draw_radii(rng, max(n, 0))
        due = self.mass_rate * elapsed - st["mass"]
        r = self._draw_radii(rng, 64)
        while True:
            m = np.cumsum(mass_and_inertia(r, self.material.density, sim.domain.dim)[0])
            if m[-1] >= due or len(r) >= room:
                break
            r = np.concatenate([r, self._draw_radii(rng, len(r))])
        n = int(min(np.searchsorted(m, due, side="right"), room))
        return r[:n]

    def __call__(self, sim):
        st = self.state
        rng = np.random.default_rng([self.seed, st["batches"]])
        st["batches"] += 1
        r = self._wanted(rng)
        if len(r) == 0:
            return
        x, rc, which = self._candidates(rng, r)
        skip = self._blocked(x, rc)
        accepted = np.zeros(len(x), np.uint8)
        _k.greedy(x, rc, which, skip, self._period(), len(r), accepted)
        take = np.flatnonzero(accepted)
        self.deficit = len(r) - len(take)
        if len(take) == 0:
            return
        x, rc = x[take], rc[take]
        dim = sim.domain.dim
        v = np.tile(self.velocity[:dim], (len(take), 1))
        sim.add_spheres(x[:, :dim] if dim == 2 else x, rc, self.material.name, velocities=v)
        st["number"] += len(take)
        st["mass"] += float(mass_and_inertia(rc, self.material.density, dim)[0].sum())

    def _candidates(self, rng, r):
        """Candidates in rounds, one per wanted sphere each round (TRIES rounds), those
        that fit in the region and in the domain's non-periodic bounds: (centres,
        radii, index of the wanted sphere)."""
        sim, dim = self.sim, self.sim.domain.dim
        lo = np.maximum(self.region.bounds[0], sim.domain.lo)
        hi = np.minimum(self.region.bounds[1], sim.domain.hi)
        rc = np.tile(r, TRIES)
        which = np.tile(np.arange(len(r), dtype=np.int64), TRIES)
        x = lo + (hi - lo) * rng.random((len(rc), 3))
        if dim == 2:
            x[:, 2] = 0.0
        fits = self.region.contains(x, rc)
        for axis in range(3):
            if not sim.domain.periodic[axis] and not (dim == 2 and axis == 2):
                fits &= (x[:, axis] - rc >= sim.domain.lo[axis]) & \
                    (x[:, axis] + rc < sim.domain.hi[axis])
        return np.ascontiguousarray(x[fits]), np.ascontiguousarray(rc[fits]), which[fits]

    def _period(self):
        dom = self.sim.domain
        return np.where(dom.periodic, dom.length, 0.0)

    def _blocked(self, x, rc):
        """1 where a candidate overlaps a particle (on any rank), a plane or a mesh wall."""
        sim, st = self.sim, self.sim.store
        out = np.zeros(len(x), np.uint8)
        if len(x) == 0:
            return out
        n = st.n_own
        pos, r = st.pos[:n], st.radius[:n]
        reach = rc.max() + (r.max() if n else 0.0)
        near = np.all((pos >= x.min(axis=0) - reach) & (pos <= x.max(axis=0) + reach), axis=1)
        if any(sim.domain.periodic):                  # images across the boundary: keep all
            near[:] = True
        _k.blocked(x, rc, np.ascontiguousarray(pos[near]), np.ascontiguousarray(r[near]),
                   self._period(), out)
        out = (sim.collective.max(out.astype(float)) > 0).astype(np.uint8)
        for k in range(len(sim.planes)):
            out |= ((x - sim.planes.point[k]) @ sim.planes.normal[k] < rc).astype(np.uint8)
        for w in sim.mesh_walls.walls:
            tri = np.ascontiguousarray(w.mesh.vertices[w.mesh.facets])
            centre = np.ascontiguousarray(tri.mean(axis=1))
            radius = np.ascontiguousarray(np.linalg.norm(tri - centre[:, None], axis=2).max(axis=1))
            d, g = np.empty(len(x)), np.empty((len(x), 3))
            _ls.mesh_signed_distance(x, tri, centre, radius, d, g, sim.threads)
            out |= (np.abs(d) < rc).astype(np.uint8)
        return out


def add_insertion(sim, region, material, radii, rate=None, mass_rate=None, count=None,
                  velocity=(0.0, 0.0, 0.0), every=1000, seed=0, name="insertion"):
    sim.collective.same("add_insertion", material=material, radii=None if callable(radii)
                        else radii, rate=rate, mass_rate=mass_rate, count=count,
                        velocity=velocity, every=every, seed=seed, name=name)
    ins = Insertion(sim, name, region, material, radii, rate, mass_rate, count, velocity,
                    every, seed)
    if name in sim.insertions:
        raise InputError("add_insertion: name %r is already in use" % (name,))
    saved = sim.insertion_states.pop(name, None)
    if saved is not None:                   # restarted: go on from the checkpoint
        ins.state = saved
    sim.insertions[name] = ins
    sim.events.every(ins.every, ins, name="insertion:" + name)
    return ins
