"""Which walls, bonds and other shapes each non-sphere particle may meet
(pdem.shapes.TOUCHES and MIXES): what is wired is accepted, the rest is refused with one
line naming the call and both sides, whichever is added first."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem import polyhedra

TRIANGLE = pdem.Mesh(np.array([[0.0, 0, 0.05], [1, 0, 0.05], [0, 1, 0.05]]), np.array([[0, 1, 2]]))


def scene(dim):
    dom = pdem.Domain((0, 0, 0), (1, 1, 1)) if dim == 3 else pdem.Domain((0, 0), (1, 1), dim=2)
    sim = pdem.Simulation(dom, dt=1e-5, comm=MPI.COMM_SELF)
    sim.material("m", density=1000.0, kn=1e4)
    return sim


SHAPES = {   # name: (dimension, adder)
    "ellipsoid": (3, lambda s, x: s.add_ellipsoids([x], [0.03, 0.02, 0.01], "m")),
    "ellipse": (2, lambda s, x: s.add_ellipses([x[:2]], [0.03, 0.02], "m")),
    "clump": (3, lambda s, x: s.add_clumps([x], s.clump_template([[0, 0, 0], [0.02, 0, 0]],
                                                                  0.02), "m")),
    "polyhedron": (3, lambda s, x: s.add_polyhedra([x], polyhedra.cube(0.03), "m")),
    "polygon": (2, lambda s, x: s.add_polygons([x[:2]], polyhedra.regular_polygon(5, 0.02),
                                               "m")),
}
WALLS = {    # name: adder (both dimensions)
    "mesh walls": lambda s: s.add_mesh_wall(TRIANGLE, "m") if s.domain.dim == 3 else
    s.add_mesh_wall(pdem.Mesh(np.array([[0, 0.05, -1], [1, 0.05, -1], [0, 0.05, 1.0]]),
                              np.array([[0, 1, 2]])), "m"),
    "boundary segments": lambda s: s.add_segments([[0.1, 0.05, 0.05][:s.domain.dim]],
                                                  [[0.9, 0.05, 0.05][:s.domain.dim]], "m"),
    "region walls": lambda s: s.add_region_wall(pdem.Box((0, 0, 0), (1, 1, 1)), "m"),
}
WIRED = {("ellipsoid", "mesh walls"), ("ellipse", "boundary segments"), ("polyhedron", "mesh walls"),
         ("polygon", "boundary segments")}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("walls", sorted(WALLS))
@pytest.mark.parametrize("wall_first", [False, True])
def test_walls_are_wired_or_refused_in_either_order(shape, walls, wall_first):
    dim, add = SHAPES[shape]
    if walls == "region walls" and dim == 2:
        pytest.skip("region walls are 3D")
    sim = scene(dim)
    steps = [lambda: WALLS[walls](sim), lambda: add(sim, [0.5, 0.5, 0.5])]
    if not wall_first:
        steps.reverse()
    steps[0]()
    if (shape, walls) in WIRED:
        steps[1]()
    else:
        with pytest.raises(pdem.InputError, match="contacts of %s particles with %s are not "
                                                  "available yet" % (shape, walls)):
            steps[1]()


@pytest.mark.parametrize("first,second", [("clump", "ellipsoid"), ("ellipsoid", "clump"),
                                          ("clump", "polyhedron"), ("polyhedron", "clump")])
def test_shapes_without_contacts_between_them_are_refused(first, second):
    sim = scene(3)
    SHAPES[first][1](sim, [0.3, 0.3, 0.3])
    with pytest.raises(pdem.InputError, match="%s and %s particles in one simulation"
                                              % (second, first)):
        SHAPES[second][1](sim, [0.7, 0.7, 0.7])


def test_ellipsoids_and_polyhedra_mix():
    sim = scene(3)
    SHAPES["ellipsoid"][1](sim, [0.3, 0.3, 0.3])
    SHAPES["polyhedron"][1](sim, [0.7, 0.7, 0.7])
    assert sorted(sim.particles()["shape"]) == [1, 4]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_bonds_are_refused_for_every_non_sphere(shape):
    dim, add = SHAPES[shape]
    sim = scene(dim)
    add(sim, [0.5, 0.5, 0.5])
    with pytest.raises(pdem.InputError, match="contacts of %s particles with bonds" % shape):
        sim.bond_material("b", kn=1e6, ks=1e6, tensile_strength=1e6, shear_strength=1e6)
