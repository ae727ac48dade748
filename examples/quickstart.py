import numpy as np
import pdem

# A 10 cm box, periodic in x and y, with a floor; glass beads, Hertz-Mindlin law.
domain = pdem.Domain(lo=(0, 0, 0), hi=(0.1, 0.1, 0.2), periodic=(True, True, False))
sim = pdem.Simulation(domain, dt=1e-5, gravity=(0, 0, -9.81))
glass = sim.material("glass", density=2500, law="hertz", young=5e7, poisson=0.25,
                     restitution=0.5, friction=0.4, rolling_friction=0.05,
                     rolling_stiffness=0.25)
sim.add_plane(point=(0, 0, 0), normal=(0, 0, 1), material=glass)

# 2,000 beads of radius 2-2.5 mm on a loose lattice, falling
rng = np.random.default_rng(0)
g = np.linspace(0.006, 0.094, 10)
x, y, z = np.meshgrid(g, g, 0.01 + 0.006 * np.arange(20), indexing="ij")
positions = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
positions[:, :2] += rng.uniform(-1e-3, 1e-3, (len(positions), 2))   # no perfect stacks
radii = rng.uniform(2e-3, 2.5e-3, len(positions))
ids = sim.add_spheres(positions, radii, glass)

sim.run(until=0.3)                      # or sim.run(steps=1000)

p = sim.particles(gather=True)          # all particles (every rank), sorted by id
c = sim.contacts(gather=True)           # one row per contact
floor = -sim.plane_forces()[0, 2]       # collective calls: on every rank
if sim.rank == 0:                       # run with `mpirun -n 4 python -m mpi4py ...` too
    weight = p["mass"].sum() * 9.81
    print("t = %.3f s, %d particles, %d contacts" % (sim.time, len(p["id"]), len(c["id1"])))
    print("bed height %.1f mm" % (1e3 * (p["position"][:, 2] + p["radius"]).max()))
    print("floor load / weight = %.3f" % (floor / weight))
    print("mean contact overlap %.2e m" % c["overlap"].mean())
