"""Memory of the particle store (issue 14): the fields of non-spherical bodies exist only
when a body does (checkpoints keep format 10 either way), large freed arrays leave the
resident set and the heap's top stays for the next rebuild (pdem/heap.py)."""
import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.particles import BODY_FIELDS, FIELDS, ParticleStore, empty_fields


def box(periodic=(True, True, True)):
    dom = pdem.Domain((0, 0, 0), (6.0, 6.0, 6.0), periodic=periodic)
    sim = pdem.Simulation(dom, dt=1e-3, comm=MPI.COMM_SELF)
    return sim, sim.material("m", density=2.0, kn=1000.0, friction=0.4)


def spheres(sim, m, steps):
    g = 0.6 + np.arange(5) * 1.1
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    sim.add_spheres(pos, 0.5, m, velocities=np.random.default_rng(1).normal(0, 1, pos.shape))
    sim.run(steps=steps)
    return sim


def test_sphere_runs_hold_no_body_fields_and_restart_bit_for_bit(tmp_path):
    path = str(tmp_path / "run.h5")
    half = spheres(*box(), 150)
    assert not set(BODY_FIELDS) & set(half.store.f)
    half.checkpoint(path)
    with h5py.File(path, "r") as f:        # the datasets of format 10 on, zero for spheres
        assert f.attrs["version"] >= 10
        for k in BODY_FIELDS:
            assert f["particles/" + k].shape[0] == 125 and not f["particles/" + k][...].any()
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    assert not set(BODY_FIELDS) & set(resumed.store.f)
    resumed.run(steps=150)
    whole = spheres(*box(), 300)
    a, b = whole.particles(), resumed.particles()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    p = a                                  # spheres: their radius as semi-axes, template 0
    assert np.all(p["semi_axes"] == 0.5) and not p["template"].any()
    assert np.allclose(p["inertia"], 0.4 * p["mass"][:, None] * 0.25, rtol=1e-15)


def test_body_fields_appear_with_the_first_ellipsoid_and_survive_a_restart(tmp_path):
    sim, m = box((False, False, False))
    sim.add_spheres([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]], 0.4, m)
    assert not set(BODY_FIELDS) & set(sim.store.f)
    axes = np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.25]])
    ids = sim.add_ellipsoids([[1.0, 3.0, 3.0], [3.0, 3.0, 3.0]], axes, m)
    assert set(BODY_FIELDS) <= set(sim.store.f)
    sim.run(steps=5)
    p = sim.particles()
    ell = np.isin(p["id"], ids)
    np.testing.assert_array_equal(p["semi_axes"][ell], axes)
    np.testing.assert_array_equal(p["semi_axes"][~ell], 0.4)
    mass = 2.0 * 4.0 / 3.0 * np.pi * axes.prod(axis=1)          # I_1 = m (b^2 + c^2) / 5
    a2 = axes ** 2
    moments = 0.2 * mass[:, None] * (a2.sum(axis=1)[:, None] - a2)
    np.testing.assert_allclose(p["inertia"][ell], moments, rtol=1e-14)
    st = sim.store
    sphere = st.shape[:st.n_own] == 0
    for k in BODY_FIELDS:                  # zero for the spheres added before them
        assert not st.f[k][:st.n_own][sphere].any(), k
    path = str(tmp_path / "shapes.h5")
    sim.checkpoint(path)
    back = pdem.restart(path, comm=MPI.COMM_SELF)
    assert set(FIELDS) - set(back.store.f) == {"strain", "stress", "strain_rate"}
    q = back.particles()
    for k in p:
        assert np.array_equal(p[k], q[k]), k


def test_store_attributes_are_its_fields_and_nothing_else():
    """st.pos is a plain attribute (the step reads about 40 per step): it must be the
    field's array after every replacement, and a replaced field must not stay alive."""
    st = ParticleStore()
    st.set_local(empty_fields(3))
    for k in st.f:
        assert getattr(st, k) is st.f[k], k
    st.enable(["semi_axes"])
    assert st.semi_axes is st.f["semi_axes"] and st.semi_axes.shape == (3, 3)
    st.append_owned({"id": np.arange(3, 5), "pos": np.ones((2, 3)), "radius": np.ones(2)})
    assert st.n == 5 and st.pos is st.f["pos"] and st.semi_axes is st.f["semi_axes"]
    np.testing.assert_array_equal(st.pos[3:], 1.0)
    old = st.f["vel"]
    st.f = {}
    assert not hasattr(st, "vel") and not hasattr(st, "pos")
    assert sys.getrefcount(old) == 2          # `old` and getrefcount's argument only


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc")
def test_freed_arrays_leave_the_resident_set():
    """Large arrays freed between small ones that stay alive: with glibc's moving mmap
    threshold (raised by freeing a 24 MiB block) they come from the heap and their
    pages stay resident; with pdem's fixed threshold (8 MiB) they are unmapped."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        if sys.argv[1] == "pdem":
            from pdem import heap
            assert heap.tune_malloc()
        def rss():
            with open("/proc/self/status") as fh:
                return int(next(l for l in fh if l.startswith("VmRSS")).split()[1])
        big = np.ones(3 << 20)          # 24 MiB, mapped and unmapped: the threshold moves
        del big
        before = rss()
        keep, arrays = [], []
        for i in range(4):
            arrays.append(np.ones(3 << 19))     # 12 MiB
            keep.append(bytearray(1 << 18))    # smaller blocks between them, kept
        del arrays
        print((rss() - before) / 1024.0)
    """)
    env = dict(os.environ)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    grown = {how: float(subprocess.run([sys.executable, "-c", code, how], env=env, check=True,
                                       capture_output=True, text=True).stdout)
             for how in ("glibc", "pdem")}
    if grown["glibc"] < 24:
        pytest.skip("this C library does not keep freed blocks resident (%s)" % grown)
    assert grown["pdem"] < 4, grown


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_freed_heap_top_is_reused_without_page_faults():
    """Arrays below the mmap threshold freed at the top of the heap and allocated again
    (what every rebuild does): with glibc's trim threshold (128 KiB) the top goes back
    to the system and each page is faulted in again; with pdem's (1 GiB) the second
    round reuses them."""
    code = textwrap.dedent("""
        import resource, sys
        import numpy as np
        from pdem import heap
        assert heap.tune_malloc()
        def faults():
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        def rebuild():
            arrays = [np.ones(1 << 17) for i in range(32)]      # 32 x 1 MiB, touched
            del arrays
        rebuild()
        before = faults()
        rebuild()
        print(faults() - before)
    """)
    env = dict(os.environ)
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        env.pop(name, None)
    faults = {}
    for how, extra in (("glibc", {"MALLOC_TRIM_THRESHOLD_": str(128 << 10)}), ("pdem", {})):
        faults[how] = int(subprocess.run([sys.executable, "-c", code], env=dict(env, **extra),
                                         check=True, capture_output=True, text=True).stdout)
    if faults["glibc"] < 2048:          # 8192 pages of 4 KiB faulted again
        pytest.skip("this C library keeps the heap's top (%s)" % faults)
    assert faults["pdem"] < 256, faults
