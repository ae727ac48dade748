"""examples/settle.py with non-smooth contact dynamics (pdem.NSCD) instead of the
spring-dashpot law: 432 rigid glass beads falling onto a floor in a box periodic in x
and y, Coulomb friction 0.4, restitution 0.5, a time step 20 times larger.

    python -m pdem run examples/settle_nscd.py --steps 400 --out results/settle_nscd
    mpirun -n 2 python -m mpi4py -m pdem run examples/settle_nscd.py --steps 400 \\
        --out results/settle_nscd

The thermo lines get a column `sweeps` (NLGS sweeps of the last step).
"""
import pdem
from settle import RADIUS, add_beads, domain     # the scene of examples/settle.py


def build(comm):
    scheme = pdem.NSCD("nlgs", tol=2e-8, alert=0.1 * RADIUS, overlap_correction=0.2)
    sim = pdem.Simulation(domain(), dt=2e-4, gravity=(0, 0, -9.81), comm=comm,
                          skin=0.1 * RADIUS, scheme=scheme)
    add_beads(sim, sim.material("glass", density=2500.0, friction=0.4, restitution=0.5))
    return sim
