"""The Scheme interface: what Simulation.step needs from a time-stepping scheme.

Simulation.step is the one step loop: drift (x, q to t) -> neighbor rebuild or ghost
refresh -> scheme.advance (velocities from t - dt/2 to t + dt/2, or a velocity-level
contact solve) -> collective checks. A scheme says:
  reach(sim, radius)   distance added to the Verlet skin (an alert distance)
  check(sim)           before a step after set-up changes (e.g. the critical time step)
  after_build(sim)     after a neighbor rebuild (e.g. every pair of materials has a law)
  advance(sim)         contact forces and velocities of one step; returns (message or
                       None, index of an owned particle with a non-finite velocity or -1)
  energy_velocities(sim)  the velocities (v-, w-) paired with the stored ones in the
                       kinetic energy m v-.v/2
  options()            constructor arguments (checkpoints: Scheme.from_description)
  stats()              per-step statistics for the thermo lines and time series
Attributes: name (registry key), stiffness (materials need a contact stiffness),
lever_flags (L6Geom flags added for the torques of the contact rows).
"""
from ..errors import InputError

SCHEMES = {}


def register(cls):
    SCHEMES[cls.name] = cls
    return cls


def from_description(desc):
    """The scheme a checkpoint describes as {"name": ..., "options": {...}}."""
    if desc["name"] not in SCHEMES:
        raise InputError("unknown time-stepping scheme %r (known: %s)"
                         % (desc["name"], sorted(SCHEMES)))
    return SCHEMES[desc["name"]](**desc["options"])


class Scheme:
    name = None
    stiffness = True
    lever_flags = 0
    particle_fields = ()        # OPTIONAL particle fields the scheme needs (pdem/particles.py)
    # advance sets sim._ahead, the next drift's values (its largest squared displacement
    # from the build positions and squared speed), when sim._predicting
    predicts_rebuild = False
    # positions change only by Simulation.step's drift: the pair kind may visit its
    # near list alone (pdem/contact/near.py)
    near_lists = False

    def reach(self, sim, radius):
        return 0.0

    def check(self, sim):
        pass

    def after_build(self, sim):
        pass

    def advance(self, sim):
        raise NotImplementedError

    def energy_velocities(self, sim):
        n = sim.store.n_own
        return sim.store.vel[:n], sim.store.angvel[:n]

    def options(self):
        return {}

    def stats(self):
        return {}

    def describe(self):
        return {"name": self.name, "options": self.options()}
