"""Near lists: the pairs of the Verlet list that can touch before the next near build.

Between two rebuilds the pair kernel screens every candidate of the Verlet list at
every step, and most do not touch (the flowing chute: 4 in 5, within the skin of 0.1 d).
A near list keeps, in list order, the candidates that are active or closer than a
margin (a fraction `Simulation.near_margin` of the skin; pyx/contacts.pyx near_pairs);
the kernel then visits those alone, in the same order, so results keep their bits.

It stays valid while no excluded pair can have closed its gap: each particle moved at
most `Simulation.travel` since the build relative to the frame of the mean flow (the
largest speed in that frame of each drift times dt, every rank's, plus the images of a
deforming cell: pdem/simulation.py step; pdem/contact/frame.py), so a
pair's gap shrank by at most twice the travel since the near build. The list is built
again once that reaches half the margin (a factor of 2 against round-off), and at every
rebuild of the Verlet list. Only for schemes whose positions change by the step's drift
alone (Scheme.near_lists).
"""
from .._kernels import contacts as ck


class NearList:
    """The near list of a pair kind (PairContacts.near), and how often it was built."""

    def __init__(self):
        self.batch = None           # the Verlet list it was built from
        self.pairs = None
        self.travel = 0.0           # Simulation.travel at its build
        self.margin = 0.0           # its margin
        self.builds = 0

    def forget(self):
        """Drop the list and the Verlet list it refers to (a rebuild makes new ones)."""
        self.batch = self.pairs = None

    def pairs_of(self, kind):
        """The near list of the pair kind `kind` (built when due), or None: every pair."""
        sim, b = kind.sim, kind.batch
        if not (sim.near_margin > 0 and sim.skin and sim.scheme.near_lists and len(b.i1)):
            self.forget()
            return None
        margin = sim.near_margin * sim.skin
        if (self.batch is not b or margin != self.margin
                or not 2.0 * (sim.travel - self.travel) < 0.5 * margin):
            st = sim.store
            self.pairs = ck.near_pairs(b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.radius,
                                       b.active, margin, any(sim.domain.periodic),
                                       kind.image_from)
            self.batch, self.travel, self.margin = b, sim.travel, margin
            self.builds += 1
        return self.pairs
