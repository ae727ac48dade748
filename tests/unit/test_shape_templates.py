"""Shape templates (pdem/shape_templates.py): flat tables with row offsets that kernels
index, one clear line for bad input, and checkpoints that carry them."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.shape_templates import ShapeTemplates

CLUMP = np.array([[-0.5, 0, 0, 1.0], [0.5, 0, 0, 1.0]])
TETRA = np.array([[1.0, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]])


def three():
    t = ShapeTemplates()
    assert t.add(3, {"spheres": CLUMP}, 5.0, (1.0, 2.0, 2.0), 1.5) == 0
    assert t.add(4, {"vertices": TETRA}, 2.67, (1.0, 1.0, 1.0), 3 ** 0.5) == 1
    assert t.add(3, {"spheres": CLUMP[:1] * 2}, 4.2, (0.5, 0.5, 0.5), 2.0) == 2
    return t


def test_tables_are_flat_with_row_offsets_per_template():
    t = three()
    offsets, data = t.table("spheres")
    assert offsets.tolist() == [0, 2, 2, 3] and data.shape == (3, 4)
    assert np.array_equal(data[offsets[2]:offsets[3]], CLUMP[:1] * 2)
    offsets, data = t.table("vertices")
    assert offsets.tolist() == [0, 0, 4, 4] and np.array_equal(data, TETRA)
    assert t.rows("vertices", 0).shape == (0, 3) and np.array_equal(t.rows("spheres", 0), CLUMP)
    assert t.table("faces")[0].tolist() == [0, 0, 0, 0]      # a name no template has
    assert t.shapes == [3, 4, 3] and t.props[1, 0] == 2.67 and len(t) == 3


def test_bad_templates_are_refused_with_one_line():
    t = three()
    with pytest.raises(pdem.InputError, match=r"table 'spheres' must have shape \(n, 4\)"):
        t.add(3, {"spheres": TETRA}, 1.0, (1, 1, 1), 1.0)
    with pytest.raises(pdem.InputError, match="must be finite and > 0"):
        t.add(3, {"spheres": CLUMP}, -1.0, (1, 1, 1), 1.0)
    assert len(t) == 3 and t.table("spheres")[0].tolist() == [0, 2, 2, 3]


def test_checkpoints_carry_templates_and_the_particle_field(tmp_path):
    from pdem import polyhedra
    dom = pdem.Domain((0, 0, 0), (4.0, 4.0, 4.0), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-3, comm=MPI.COMM_SELF)
    m = sim.material("m", density=1.0, kn=1000.0)
    sim.add_polyhedra([[3.0, 3, 3]], polyhedra.tetrahedron(0.8), m)
    sim.add_polyhedra([[1.0, 1, 1]], polyhedra.cube(0.5), m)
    path = str(tmp_path / "t.h5")
    sim.checkpoint(path)
    again = pdem.restart(path, comm=MPI.COMM_SELF)
    for name in ("spheres", "vertices"):
        for a, b in zip(sim.templates.table(name), again.templates.table(name)):
            assert np.array_equal(a, b)
    assert len(again.templates) == 2
    assert again.templates.shapes == sim.templates.shapes
    assert np.array_equal(again.templates.props, sim.templates.props)
    order = np.argsort(again.store.f["id"][:2])
    assert again.store.f["template"][:2][order].tolist() == [0, 1]    # ids in adding order
