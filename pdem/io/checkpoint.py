"""Checkpoints: everything needed to continue a run bit for bit, on any rank count.

One HDF5 file written collectively (h5py `mpio` driver) to `<path>.tmp` and renamed
to `<path>` by rank 0 only once every rank has closed it, so a crash or a full disk
never destroys the previous good checkpoint.

Layout (version 8): root attributes hold the scalars (step, time, clock_t0, clock_step0,
dt, skin, flags, next id, options) and JSON of the domain, materials, pair overrides,
time-stepping scheme ({"name", "options"}: pdem.scheme.from_description) and bonds (bond
materials, the longest bond), `events_fired` (JSON: names of the once-events that have
fired, pdem/events.py), `motions` (JSON: the wall motion laws, pdem/motion.py),
`insertions` (JSON: the progress of each insertion by name, pdem/insertion.py),
`energy` (JSON, with track_energy: the energy tracker's exact sums, pdem/energy.py);
`bonds_broken/<field>` the record of broken bonds; `planes/{point,normal,vel,material}`;
`external/{ids,force,torque}` the external loads (pdem/editing.py);
`segments/{a,b,material}` and `points/{a,b,material}` (2D boundary segments and points,
a == b); `region_walls/{material,<i>}` (level-set walls, each region pickled);
`particles/<field>` for every field of pdem.particles.FIELDS plus `build_pos`, the
position at the last neighbor build (rows in no particular order; ids stored; the shape
fields since version 7, `template` since 8, zero = spheres when reading older files; the
body fields `semi_axes`, `inertia_body`, `angmom`, `template` are written for spheres too,
zero, but a run of spheres only reads none of them back (the store holds them only with
non-spheres, pdem/particles.py); the OPTIONAL fields `strain`, `stress`, `strain_rate`
since 10, only when the store holds them);
`templates/` the shape templates (clumps, polyhedra: pdem.shape_templates.ShapeTemplates);
`interactions/<kind>/{key,active,state}` for every interaction kind (pdem.contact.kinds:
pair, plane, mesh, ...), the active contact rows (L6Geom state and law history) keyed as
pdem.contact.keys says, each contact written once (by the rank owning its first
particle), with the row layout and the key layout as attributes; `mesh_walls/<i>/...`
the mesh walls (current and build-time vertices, normals, flags, motion state: see
pdem.contact.mesh_walls.MeshWalls.save).

Bitwise continuation: positions are stored unwrapped and `build_pos` keeps the
neighbor-rebuild schedule of the original run. The restarted run builds its first
Verlet list without wrapping, with twice the skin so that it stays valid until the
next scheduled rebuild (particles may by then be skin/2 from build_pos, and were up
to skin/2 from it at the restart). pdem uses no random numbers: there is no random
state to store.
"""
import dataclasses
import json
import os

import h5py
import numpy as np
from mpi4py import MPI

from ..collective import Collective
from ..contact import keys
from ..contact.flags import APPROX, NO_RATCH
from ..contact.bonds import BROKEN_FIELDS
from ..contact.kinds import KINDS
from ..contact.store import COLUMNS, NCOLS, ContactBatch
from ..domain import Domain
from ..errors import InputError
from ..particles import BODY_FIELDS, FIELDS, OPTIONAL
from ..scheme import from_description
from .frames import collective_transfer, row_offsets, write_slab

VERSION = 11        # 2: contact rows of 27 doubles; 3: interaction kinds, 32-bit id keys;
                    # 4: 2D boundary segments and points; 5: bonds; 6: region walls;
                    # 7: particle shapes (shape, semi_axes, inertia_body, angmom) and the
                    # ellipsoid kinds; 8: shape templates (pdem/shape_templates.py) and
                    # the energy tracker's sums (attribute `energy`), the periodic cell
                    # (group "cell", pdem/cell.py); 9: the clump kinds,
                    # rows with a sub-key (pdem/contact/clump_kinds.py), and the polyhedron
                    # kinds (docs/polyhedra.md); 10: the strain, stress and strain rate
                    # of deformable DDA particles (docs/dda.md), the kind phmesh;
                    # 11: the polygon kinds phseg, phpoint (pdem/contact/polygon_segments.py)
READS = (5, 6, 7, 8, 9, 10, 11)  # older files: no region walls (5), no shapes (5, 6): spheres only
SINCE = {"shape": 7, "semi_axes": 7, "inertia_body": 7, "angmom": 7,   # particle fields
         "template": 8}                                              # newer than format 5
KIND_SINCE = {"region": 6, "ellpair": 7, "ellplane": 7, "ellmesh": 9, "clump": 9,   # kinds
              "clplane": 9, "phpair": 9, "phplane": 9, "phmesh": 10,
              "phseg": 11, "phpoint": 11}        # newer than 5
ELEMENT_FIELDS = ("a", "b", "material")      # pdem.contact.walls.Segments
ROW_LAYOUT = json.dumps({"columns": COLUMNS, "ncols": NCOLS, "key_bits": keys.BITS})
CHUNK = 1 << 20                     # rows read at a time on restart
OPTIONS = ("skin", "flags", "lost", "check_timestep", "max_overlap", "balance", "track_energy",
           "near_margin", "sphere_orientations")


def _write_rows(group, name, local, comm):
    """Collective: dataset `name` holding every rank's rows, in rank order."""
    (offset,), (total,) = row_offsets(comm, [len(local)])
    dset = group.create_dataset(name, shape=(total,) + local.shape[1:], dtype=local.dtype)
    if total:
        write_slab(dset, offset, local, collective_transfer())
    return dset


def write(sim, path):
    """Write a checkpoint of `sim` to `path` (collective)."""
    comm = sim.comm
    tmp = path + ".tmp"
    folder = os.path.dirname(os.path.abspath(path))
    if comm.rank == 0 and not os.access(folder, os.W_OK):
        err = "checkpoint folder %r is not writable" % folder
    else:
        err = None
    sim.collective.raise_if_any(err, InputError)
    st, n = sim.store, sim.store.n_own
    with h5py.File(tmp, "w", driver="mpio", comm=comm) as f:
        a = f.attrs
        a["format"], a["version"] = "pdem checkpoint", VERSION
        a["step"], a["time"], a["dt"] = sim.step_count, sim.time, sim.dt
        a["clock_t0"], a["clock_step0"] = sim.clock_origin   # time = t0 + (step - step0) dt
        a["next_id"], a["n_rebuilds"] = sim.next_id, sim.n_rebuilds
        a["frame"] = json.dumps(sim.frame.state())     # the rebuild test's (contact/frame.py)
        a["gravity"] = sim.gravity
        a["dirty"] = sim.needs_rebuild
        a["options"] = json.dumps({k: getattr(sim, k) for k in OPTIONS})
        a["scheme"] = json.dumps(sim.scheme.describe())
        bonds = sim.interactions["bond"]
        a["bonds"] = bonds.describe()
        a["events_fired"] = json.dumps(sorted(sim.events.fired))   # once-events (pdem/events.py)
        a["motions"] = json.dumps(sim.motions.describe())           # wall motion laws
        if sim.track_energy:                                        # the energy sums
            a["energy"] = json.dumps(sim.energy_tracker.describe(sim))
        a["insertions"] = json.dumps({**sim.insertion_states,          # insertion progress
                                      **{k: v.state for k, v in sim.insertions.items()}})
        dom = sim.domain
        a["domain"] = json.dumps({"lo": dom.lo.tolist(), "hi": dom.hi.tolist(),
                                  "periodic": list(dom.periodic), "dim": dom.dim})
        a["materials"] = json.dumps([{k: v for k, v in dataclasses.asdict(m).items()
                                      if k != "index"} for m in sim.materials.materials])
        a["pairs"] = json.dumps([[i, j, p] for (i, j), p in sim.materials.overrides.items()])
        planes = f.create_group("planes")
        for name in ("point", "normal", "vel", "material", "build_point"):
            planes.create_dataset(name, data=getattr(sim.planes, name))  # identical on all ranks
        for name in ("ids", "force", "torque"):          # identical on all ranks too
            f.create_dataset("external/" + name, data=getattr(sim.external, name))
        for group in ("segments", "points"):
            for name in ELEMENT_FIELDS:
                f.create_dataset(group + "/" + name, data=getattr(getattr(sim, group), name))
        sim.mesh_walls.save(f.create_group("mesh_walls"))
        arrays, info = sim.cell.state()                  # identical on all ranks
        cell = f.create_group("cell")
        cell.attrs["info"] = json.dumps(info)
        for name, value in arrays.items():
            cell.create_dataset(name, data=value)
        sim.region_walls.save(f.create_group("region_walls"))
        sim.templates.save(f.create_group("templates"))
        broken = f.create_group("bonds_broken")
        for name, rows in bonds.broken.items():
            _write_rows(broken, name, rows, comm)
        parts = f.create_group("particles")
        for name in FIELDS:             # the body fields always (zero for spheres: files
            if name in st.f or name in BODY_FIELDS:    # of format 10 as before), those of
                _write_rows(parts, name,                 # deformable DDA when held
                            np.ascontiguousarray(st.column(name, n)), comm)
        _write_rows(parts, "build_pos", np.ascontiguousarray(sim.build_positions()), comm)
        for name, kind in sim.interactions.items():
            g = f.create_group("interactions/" + name)
            g.attrs["layout"] = ROW_LAYOUT
            batch, k = kind.batch, kind.saved()
            _write_rows(g, "key", batch.key[k], comm)
            _write_rows(g, "active", batch.active[k], comm)
            _write_rows(g, "state", np.ascontiguousarray(batch.state[batch.at(k)]), comm)
            if getattr(kind, "subkeys", False):     # clump member indices (clump_kinds.py)
                _write_rows(g, "sub", batch.sub[k], comm)
    comm.Barrier()                          # every rank has closed the file
    if comm.rank == 0:
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    comm.Barrier()


def _open(path, comm):
    """Open a checkpoint for reading; InputError naming the file if it is not one."""
    problem = None
    try:
        f = h5py.File(path, "r", driver="mpio", comm=comm)
    except (OSError, ValueError) as exc:
        f, problem = None, "cannot read checkpoint %r: %s" % (path, exc)
    if f is not None:
        if f.attrs.get("format") != "pdem checkpoint":
            problem = "%r is not a pdem checkpoint" % (path,)
        elif f.attrs.get("version") not in READS:
            problem = ("%r is a pdem checkpoint of format version %s; this pdem reads versions "
                       "%s" % (path, f.attrs.get("version"), READS))
        else:
            need = ["planes/" + k for k in ("point", "normal", "vel", "material")] + \
                ["%s/%s" % (g, k) for g in ("segments", "points") for k in ELEMENT_FIELDS] + \
                ["particles/" + k for k in list(FIELDS) + ["build_pos"]
                 if f.attrs["version"] >= SINCE.get(k, 5) and k not in OPTIONAL] + \
                ["interactions/%s/%s" % (c.name, k) for c in KINDS
                 for k in ("key", "active", "state")
                 if f.attrs["version"] >= KIND_SINCE.get(c.name, 5)] + \
                ["mesh_walls"] + \
                ["bonds_broken/" + k for k in BROKEN_FIELDS]
            missing = [k for k in need if k not in f]
            counts = {len(f["particles/" + k]) for k in list(FIELDS) + ["build_pos"]
                      if "particles/" + k in f}
            layouts = {f["interactions/" + c.name].attrs.get("layout") for c in KINDS
                       if "interactions/" + c.name in f}
            if not missing and layouts != {ROW_LAYOUT}:
                problem = ("checkpoint %r has contact rows of another layout %s; this pdem "
                           "writes %s" % (path, sorted(layouts), ROW_LAYOUT))
            elif missing or len(counts) > 1:
                problem = "checkpoint %r is truncated or corrupted: %s" % (
                    path, "missing " + ", ".join(missing) if missing else
                    "particle datasets of different lengths %s" % sorted(counts))
    if problem is not None and f is not None:
        f.close()
    Collective(comm).raise_if_any(problem, InputError)
    return f


def _chunks(dset):
    for start in range(0, len(dset), CHUNK):
        yield start, dset[start:start + CHUNK]


def read(path, simulation, comm=None, threads=None, dims=None):
    """A `simulation` (the class pdem.Simulation) continuing the checkpoint `path` on
    the ranks of `comm` (default MPI.COMM_WORLD, any size), with `threads` OpenMP
    threads per rank (collective)."""
    comm = MPI.COMM_WORLD if comm is None else comm
    with _open(path, comm) as f:
        a = f.attrs
        d = json.loads(a["domain"])
        opts = json.loads(a["options"])
        flags = int(opts.pop("flags"))
        sim = simulation(Domain(d["lo"], d["hi"], d["periodic"], 3) if d["dim"] == 3 else
                         Domain(d["lo"][:2], d["hi"][:2], d["periodic"][:2], 2),
                         float(a["dt"]), gravity=np.asarray(a["gravity"]), comm=comm,
                         threads=threads, dims=dims,
                         approx=[k for k, bit in APPROX.items() if flags & bit],
                         no_ratch=bool(flags & NO_RATCH),
                         scheme=from_description(json.loads(a["scheme"])), **opts)
        for m in json.loads(a["materials"]):
            sim.material(m.pop("name"), m.pop("density"), **m)
        for i, j, params in json.loads(a["pairs"]):
            sim.pair(i, j, **params)
        for name in ("point", "normal", "vel", "material"):
            setattr(sim.planes, name, f["planes/" + name][...])
        # the points at the last build (files before it: as if built at the checkpoint)
        sim.planes.built_at(f["planes/build_point"][...] if "planes/build_point" in f
                            else sim.planes.point.copy())
        if "external" in f:
            for name in ("ids", "force", "torque"):
                setattr(sim.external, name, f["external/" + name][...])
        for group in ("segments", "points"):
            for name in ELEMENT_FIELDS:
                setattr(getattr(sim, group), name, np.ascontiguousarray(f[group + "/" + name][...]))
        sim.mesh_walls.load(f["mesh_walls"])
        if "region_walls" in f:
            sim.region_walls.load(f["region_walls"])
        if "templates" in f:
            sim.templates.load(f["templates"])
        sim.motions.restore(json.loads(a["motions"]) if "motions" in a else [])
        if "energy" in a:
            sim.energy_tracker.restore(json.loads(a["energy"]), comm.rank)
        sim.insertion_states = json.loads(a["insertions"]) if "insertions" in a else {}
        # the record of breaks goes to rank 0 (it is output, not state)
        sim.interactions["bond"].restore(a["bonds"], {
            k: f["bonds_broken/" + k][...] if comm.rank == 0 else f["bonds_broken/" + k][:0]
            for k in BROKEN_FIELDS})
        sim.set_clock(float(a["time"]), int(a["step"]),
                      (float(a["clock_t0"]), int(a["clock_step0"])) if "clock_t0" in a else None)
        sim.next_id, sim.n_rebuilds = int(a["next_id"]), int(a["n_rebuilds"])
        if "frame" in a:                # older files: the frame at rest until the next build
            sim.frame.restore(json.loads(a["frame"]), sim.planes)
        sim.events.fired = set(json.loads(a["events_fired"])) if "events_fired" in a else set()
        if "cell" in f:                 # version 8: the cell (before owners are known)
            sim.cell.restore({k: v[...] for k, v in f["cell"].items()},
                             json.loads(f["cell"].attrs["info"]))
        # particles: each rank keeps those in its subdomain
        own = {k: [] for k in list(FIELDS) + ["build_pos"] if "particles/" + k in f}
        pos = f["particles/pos"]
        for start, p in _chunks(pos):
            keep = np.flatnonzero(sim.dec.owner(sim.cell.reference(p)) == sim.rank)
            for k in own:
                own[k].append(f["particles/" + k][start:start + len(p)][keep] if k != "pos"
                              else p[keep])
        own = {k: np.concatenate(v) if v else np.empty((0,) + f["particles/" + k].shape[1:],
                                                         f["particles/" + k].dtype)
               for k, v in own.items()}
        build_pos = own.pop("build_pos")
        if "shape" not in own or not sim.collective.max(float(np.any(own["shape"] != 0))):
            for k in BODY_FIELDS:       # spheres only: the store does not hold them
                own.pop(k, None)
        for k in FIELDS:                # fields newer than the file (SINCE): zero = spheres
            if k not in own and k not in OPTIONAL:
                dtype, width = FIELDS[k]
                own[k] = np.zeros((len(build_pos), width) if width else len(build_pos), dtype)
        sim.store.append_owned(own)
        # contact rows with a particle this rank owns (a wall's partner is no particle)
        ids = np.sort(own["id"])
        for name, kind in sim.interactions.items():
            if "interactions/" + name not in f:      # a kind newer than the file
                continue
            g = f["interactions/" + name]
            rows = {"key": [], "active": [], "state": []}
            if "sub" in g:
                rows["sub"] = []
            for start, key in _chunks(g["key"]):
                k = np.flatnonzero(np.any([np.isin(p, ids) for p in kind.key_particles(key)],
                                          axis=0))
                for col in rows:
                    rows[col].append(g[col][start:start + len(key)][k])
            kind.batch = ContactBatch.from_rows(*(np.concatenate(rows[c]) for c in rows)) \
                if rows["key"] else ContactBatch()
        sim.attach_restored(build_pos, dirty=bool(a["dirty"]))
    return sim
