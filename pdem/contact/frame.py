"""The moving frame of the rebuild test.

A pair's gap changes between two builds by at most |d_a - d_b|, the difference of the
two particles' displacements: a uniform translation of everything cancels in it. So the
pair lists (Verlet and near lists) stay valid while every particle has moved less than
half the skin relative to a frame that moves at any uniform velocity c since the
build: |d_i - c tau| < skin / 2 (tau: the time since the build). On a chute the grains
all move down the slope at about the same speed; relative to the mean flow they move
3x slower (bench/README.md), and the near lists last 2x longer, the Verlet lists up to
2x (the whole-skin bound below).

c is taken at each build: the centre of the box of the owned velocities of every rank
(one reduction the rebuild makes anyway), the same on every rank. Walls are fixed in
space: a plane sees a particle's displacement along its normal, |d_i . n| <=
|d_i - c tau| + |c tau . n|, which the rebuild test adds (`moved2`). For mesh walls,
2D segments and region walls the frame stays at rest (c = 0: the absolute
displacements, bit for bit the test without a frame). Positions are wrapped into a
periodic box at the builds: the test also keeps every particle within a whole skin of
its build position, |d_i| <= |d_i - c tau| + |c tau| <= skin (half a skin without a
frame), so that positions stay within a skin of the box for outputs and regions.
"""
import math

import numpy as np


class MovingFrame:
    def __init__(self):
        self.velocity = (0.0, 0.0, 0.0)   # c (Python floats: no numpy call per step)
        self.time = 0.0                  # tau
        self.rates = None                # |c| and the largest |c . n| of a plane; None: c = 0

    def advance(self, dt):
        """The frame at the next drift's time, as integrate.drift takes it."""
        self.time += dt
        return self.at(self.time)

    def ahead(self, dt):
        """What `advance(dt)` will give (the kick's prediction of the next drift)."""
        return self.at(self.time + dt)

    def at(self, time):
        """The kernels' frame `time` after the build: its shift c time, then c (6
        floats), or None for a frame at rest."""
        if not self.rates:
            return None
        cx, cy, cz = self.velocity
        return (cx * time, cy * time, cz * time, cx, cy, cz)

    @staticmethod
    def velocity_box(vel):
        """This rank's largest velocity components and largest negated ones (6 values,
        -inf without particles), for the build's reduction (a maximum)."""
        if not len(vel):
            return np.full(6, -np.inf)
        # by rows of the transpose: numpy reduces an (n, 3) array along axis 0 ~15x slower
        # (0.6 against 0.04 ms for 17,000 rows), the same values
        by_axis = np.ascontiguousarray(vel.T)
        return np.concatenate([by_axis.max(axis=1), -by_axis.min(axis=1)])

    def reset(self, sim, box):
        """At a build (not a restart's): c = the centre of every rank's velocity box (the
        reduced `velocity_box`), or 0 when walls other than planes need the absolute
        displacements, or without particles."""
        fixed = len(sim.mesh_walls) or len(sim.segments) or len(sim.points) or \
            len(sim.region_walls)
        moving = not fixed and np.all(np.isfinite(box))
        self._set(0.5 * (box[:3] - box[3:]) if moving else np.zeros(3), 0.0, sim.planes)

    def moved2(self, moved2):
        """The square of the displacement to compare with half the skin, from the
        largest squared displacement in the frame (moved2): that displacement, or
        towards a plane that plus the frame's own shift along the plane's normal, or
        half the bound of the displacement itself (within a skin), whichever is
        largest. A frame at rest: moved2 itself."""
        if not self.rates:
            return moved2
        d, (speed, lead) = math.sqrt(moved2), self.rates
        return max(d + lead * self.time, 0.5 * (d + speed * self.time)) ** 2

    def state(self):
        return {"velocity": list(self.velocity), "time": self.time}

    def restore(self, state, planes):
        """From `state` (a checkpoint)."""
        self._set(np.asarray(state["velocity"], float), float(state["time"]), planes)

    def _set(self, velocity, time, planes):
        self.velocity = tuple(float(v) for v in velocity)
        self.time = time
        self.rates = None if not np.any(velocity) else (
            math.sqrt(velocity @ velocity),
            float(np.max(np.abs(planes.normal @ velocity))) if len(planes) else 0.0)
