"""Contact keys: one int64 per contact row, `particle id << 32 | partner`, where the
partner is the second particle's id (pairs, particle 1 the lower id), a plane index or
a global facet index. The layout never depends on how many particles exist, so keys
stay valid when particles are added, and sorting by key sorts by (particle, partner).
"""
import numpy as np

BITS = 32
MAX_ID = (1 << 31) - 1          # ids must fit in 31 bits: keys stay positive
_LOW = (1 << BITS) - 1


def make(particle_id, partner):
    return (np.asarray(particle_id, np.int64) << BITS) | np.asarray(partner, np.int64)


def particle(key):
    """The particle id of each key (the first particle of a pair)."""
    return np.asarray(key, np.int64) >> BITS


def partner(key):
    return np.asarray(key, np.int64) & _LOW
