"""Bit-level states of the MPI test scenes, to show that a refactor keeps the
kernels' results bit for bit: capture with the old and with the new code, compare.

  PYTHONPATH=$PWD .venv/bin/python bench/bitwise_states.py capture OUT.npz [scene ...]
  mpirun -n 3 .venv/bin/python -m mpi4py bench/bitwise_states.py capture OUT.npz
  .venv/bin/python bench/bitwise_states.py compare A.npz B.npz

Run from a checkout's root: the scenes come from its tests/mpi/scenes.py. Contacts
are matched by (kind, wall, id1, id2), so files of the format before the contact
`kind` column (ids encoded as -1 - plane, -65537 - wall) compare too.
"""
import sys

import numpy as np

STEPS = {"sheared3": 600, "sheared2": 600, "sheared3_t2": 300, "pile": 400, "mesh": 400,
         "nscd_jac": 200, "nscd_nlgs": 200}


def build(name, comm):
    import scenes
    return {"sheared3": lambda: scenes.sheared_box(comm, dim=3),
            "sheared2": lambda: scenes.sheared_box(comm, dim=2),
            "sheared3_t2": lambda: scenes.sheared_box(comm, dim=3, threads=2),
            "pile": lambda: scenes.corner_pile(comm),
            "mesh": lambda: scenes.stirred_mesh_box(comm),
            "nscd_jac": lambda: scenes.nscd_conveyor(comm, solver="jacobi"),
            "nscd_nlgs": lambda: scenes.nscd_conveyor(comm, solver="nlgs")}[name]()


def contact_keys(c):
    """(kind code, wall, id1, id2) of each contact, in either contact format."""
    if "kind" in c:
        kind = np.select([c["kind"] == "pair", c["kind"] == "plane"], [0, 1], 2)
        return kind, np.asarray(c["wall"], np.int64), np.where(kind == 0, c["id1"], -1), c["id2"]
    id1 = np.asarray(c["id1"], np.int64)
    kind = np.where(id1 >= 0, 0, np.where(id1 > -65537, 1, 2))
    wall = np.where(kind == 1, -1 - id1, np.where(kind == 2, -65537 - id1, -1))
    return kind, wall, np.where(kind == 0, id1, -1), c["id2"]


def capture(path, names):
    from mpi4py import MPI
    sys.path.insert(0, "tests/mpi")
    comm, out = MPI.COMM_WORLD, {}
    for name in names or STEPS:
        sim = build(name, comm)
        sim.run(steps=STEPS[name])
        p, c = sim.particles(gather=True), sim.contacts(gather=True)
        kind, wall, id1, id2 = contact_keys(c)
        order = np.lexsort((c["force"][:, 0], id2, id1, wall, kind))
        for k in ("position", "velocity", "angular_velocity", "force", "torque", "orientation"):
            out[name + "/p/" + k] = p[k]
        for k in ("force", "torque", "u", "phi", "overlap", "normal", "point"):
            out[name + "/c/" + k] = c[k][order]
        out[name + "/c/keys"] = np.column_stack([kind, wall, id1, id2])[order]
        if comm.rank == 0:
            print(name, len(p["id"]), "particles", len(id1), "contacts", flush=True)
    if comm.rank == 0:
        np.savez(path, **out)


def compare(a_path, b_path):
    a, b = np.load(a_path), np.load(b_path)
    bad = [k for k in a.files if k not in b.files or a[k].shape != b[k].shape
           or a[k].tobytes() != b[k].tobytes()]
    for k in bad:
        print("differs:", k)
    print("compared %d arrays: %s" % (len(a.files), "all bitwise equal" if not bad
                                      else "%d differ" % len(bad)))
    return not bad


if __name__ == "__main__":
    if sys.argv[1:2] == ["capture"]:
        capture(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
