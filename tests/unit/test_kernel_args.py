"""The per-step kernels take ndarrays checked by pyx/arrays.pxd (no typed memoryviews):
what a memoryview accepted still works (read-only inputs, empty arrays), what it refused
is refused with one line naming the argument, and arrays too short for the particle
count are refused before any work (a memoryview with bounds checks off did not)."""
import numpy as np
import pytest

from pdem._kernels import contacts as ck
from pdem._kernels import ghost_copy, integrate
from pdem.materials import COL


def particles(n=4, seed=3):
    rng = np.random.default_rng(seed)
    return dict(pos=rng.uniform(0, 1, (n, 3)), vel=rng.normal(size=(n, 3)),
                angvel=rng.normal(size=(n, 3)), orient=np.tile([1.0, 0, 0, 0], (n, 1)),
                force=rng.normal(size=(n, 3)), torque=rng.normal(size=(n, 3)),
                mass=np.ones(n), inertia=np.full(n, 0.1), blocked=np.zeros(n, np.uint8))


def drift(p, n, **replace):
    a = dict(p, **replace)
    return integrate.drift(a["pos"], a["vel"], a["angvel"], a["orient"], a["pos"].copy(),
                           1e-3, n, 1)


def kick(p, n, **replace):
    a = dict(p, **replace)
    return integrate.kick(a["vel"], a["angvel"], a["force"], a["torque"], a["mass"],
                          a["inertia"], a["blocked"], np.array([0.0, 0.0, -9.81]), 1e-3, n, 1)


def test_read_only_inputs_are_accepted_and_give_the_memoryview_results():
    p = particles()
    ref = {k: v.copy() for k, v in p.items()}
    for k in ("force", "torque", "mass", "inertia", "blocked"):
        p[k].flags.writeable = False
    kick(p, 4)
    for k in ("vel", "angvel"):
        p[k].flags.writeable = False
    drift(p, 4)
    # the leap-frog by hand, in integrate.pyx's order: v + F (dt / m) + g dt, x + v dt
    v = ref["vel"] + ref["force"] * (1e-3 / ref["mass"][:, None]) + np.array([0, 0, -9.81 * 1e-3])
    assert np.array_equal(p["vel"], v)
    assert np.array_equal(p["pos"], ref["pos"] + v * 1e-3)


@pytest.mark.parametrize("name, bad, words", [
    ("pos", np.zeros((4, 3), np.float32), "pos: expected a C-contiguous writable float64"),
    ("pos", np.zeros((4, 6))[:, ::2], "not contiguous"),
    ("orient", np.zeros((4, 3)), "orient: expected a C-contiguous writable float64 array of shape (n, 4)"),
    ("vel", [[0.0] * 3] * 4, "vel: expected a C-contiguous float64 array of shape (n, 3), got list"),
    ("orient", np.zeros((3, 4)), "orient: 3 rows for 4 particles"),
])
def test_drift_names_the_bad_argument(name, bad, words):
    with pytest.raises(ValueError) as e:
        drift(particles(), 4, **{name: bad})
    assert words in str(e.value) and "\n" not in str(e.value)


def test_kick_refuses_read_only_outputs_and_short_arrays():
    p = particles()
    p["vel"].flags.writeable = False
    with pytest.raises(ValueError, match="vel: expected a C-contiguous writable"):
        kick(p, 4)
    with pytest.raises(ValueError, match="blocked: 2 rows for 4 particles"):
        kick(particles(), 4, blocked=np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match="mass: expected .*float64 .*got int64"):
        kick(particles(), 4, mass=np.ones(4, np.int64))


def test_contact_kernels_name_the_bad_argument():
    p = particles()
    table = np.zeros((1, COL["ncols"]))
    i = np.zeros(1, np.int32)
    state = np.zeros((1, ck.state_columns()["ncols"]))
    common = dict(i1=i, i2=i + 1, pos=p["pos"], image=np.zeros((4, 3), np.int32),
                  cell=np.zeros((6, 3)), vel=p["vel"], angvel=p["angvel"], radius=np.ones(4),
                  mass=p["mass"], material=np.zeros(4, np.int32), pair_table=table,
                  n_materials=1, dt=1e-3, flags=0, active=np.zeros(1, np.int8), state=state,
                  n_threads=1)
    for name, bad, words in (
            ("i2", np.ones(1, np.int64), "i2: expected a C-contiguous int32"),
            ("active", np.zeros(1, bool), "active: expected a C-contiguous writable int8"),
            ("state", np.zeros((1, 5)), "state: expected a C-contiguous writable float64 array of shape (n, %d)"
             % ck.state_columns()["ncols"]),
            ("image", np.zeros((4, 3)), "image: expected a C-contiguous int32"),
            ("cell", np.zeros((3, 3)), "cell must be (6, 3)")):
        with pytest.raises(ValueError) as e:
            ck.sphere_sphere(**dict(common, **{name: bad}))
        assert words in str(e.value), (name, str(e.value))
    f = np.zeros((4, 3))
    with pytest.raises(ValueError, match="t_out: expected a C-contiguous writable float64"):
        ck.sphere_sphere(**common, owner=np.arange(4, dtype=np.int32), f_out=f,
                         t_out=np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="in-pass sums need all of f_out, t_out and owner"):
        ck.sphere_sphere(**common, f_out=f, t_out=f.copy())
    # the owner of every local particle (a pair's particle 2 may be any of them)
    with pytest.raises(ValueError, match="owner: 1 entries for 4"):
        ck.sphere_sphere(**common, owner=i, f_out=f, t_out=f.copy())


def test_ghost_messages_check_their_widths_and_rows():
    a, b = np.arange(12.0).reshape(4, 3), np.arange(4.0).reshape(4, 1)
    msg = np.zeros((2, 4))
    with pytest.raises(ValueError, match="buf: expected a C-contiguous writable float64 "
                                         "array of shape \\(n, 4\\), got float64 \\(2, 3\\)"):
        ghost_copy.pack(np.zeros((2, 3)), [a, b], np.array([0, 1]))
    with pytest.raises(ValueError, match="src: expected a C-contiguous int64"):
        ghost_copy.pack(msg, [a, b], np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match="pack: 2 message rows for 3 sources"):
        ghost_copy.pack(msg, [a, b], np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="arrays: expected a C-contiguous writable float64"):
        ghost_copy.pack(msg, [a, b.astype(np.float32)], np.array([0, 1]))
    ghost_copy.pack(msg, [a, b], np.array([3, 0]))
    assert np.array_equal(msg, [[9, 10, 11, 3], [0, 1, 2, 0]])
    with pytest.raises(ValueError, match="unpack: rows 3 \\+ 2 of 4"):
        ghost_copy.unpack([a, b], 3, msg)
    with pytest.raises(ValueError, match="copy_images: 2 sources, 1 targets"):
        ghost_copy.copy_images([a], np.array([0, 1]), np.array([2]))
