"""One step's NSCD contact problem and its solve (pdem.nscd.scheme.NSCD.solve): the contact list, the
per-contact constants (pyx/nscd.pyx prepare) and the NLGS and Jacobi sweep loops with
their convergence test (seed 003: every velocity correction of a sweep below tol/dt,
at most itmax sweeps).

Between sweeps `end_sweep(residual, ghost_dv, ghost_dw)` makes the velocities of
ghost copies current and returns the residual over all ranks (on one process: the
residual itself). NLGS passes the increments it gave to ghost rows, for their owners
(block Gauss-Seidel); Jacobi passes None (each rank computes the contacts it shares
with another from identical copies).
"""
import time
import warnings

import numpy as np

from .._kernels import contacts as _ck
from .._kernels import nscd as _k


class ConvergenceWarning(UserWarning):
    """A solve stopped at itmax sweeps; `residual` is the last sweep's largest velocity
    correction (to compare with tol/dt), `iterations` the number of sweeps."""

    def __init__(self, message, residual=None, iterations=None):
        super().__init__(message)
        self.residual = residual
        self.iterations = iterations


def _local_end_sweep(res, ghost_dv, ghost_dw):
    return res


def exchange_ghost_velocities(ghosts, v, w, n_owned, ghost_dv, ghost_dw):
    """After a sweep on several ranks (ghosts: a pdem.parallel.ghosts.GhostExchange
    built for these rows): the increments NLGS gave to ghost rows (ghost_dv, ghost_dw;
    None for Jacobi) are added to their owners' rows (reverse of the ghost swaps) and
    zeroed, then every ghost row gets its owner's current velocities."""
    if ghost_dv is not None:
        ghosts.reverse_add([ghost_dv, ghost_dw])
        v[:n_owned] += ghost_dv[:n_owned]
        w[:n_owned] += ghost_dw[:n_owned]
        ghost_dv[:] = 0.0
        ghost_dw[:] = 0.0
    ghosts.refresh_arrays([v, w], tag=300)


class ContactSolve:
    """Contacts c (conventions of pyx/nscd.pyx): kind, grain row ci, body cj, unit
    normal (from j to i, (m, 3)), gap, friction mu and restitution e per contact, and
    vb, the velocity of a boundary body at the contact (zero: fixed walls). After a
    solve, pn and pt hold the impulses on grain i (normal >= 0, tangential vector)."""

    def __init__(self, kind, ci, cj, normal, gap, mu, e, vb=None):
        m = len(kind)
        self.kind = np.ascontiguousarray(kind, np.int8)
        self.ci = np.ascontiguousarray(ci, np.int32)
        self.cj = np.ascontiguousarray(cj, np.int32)
        self.normal = np.ascontiguousarray(normal, float)
        self.gap = np.ascontiguousarray(gap, float)
        self.mu = np.ascontiguousarray(mu, float)
        self.e = np.ascontiguousarray(e, float)
        self.vb = np.zeros((m, 3)) if vb is None else np.ascontiguousarray(vb, float)
        self.pn = np.zeros(m)
        self.pt = np.zeros((m, 3))
        self.W = np.zeros(m)
        self.wt = np.zeros(m)
        self.target = np.zeros(m)

    def __len__(self):
        return len(self.kind)

    def solve(self, solver, v, w, r, m, inv_inertia, dt, tol, itmax, n_owned, beta=0.0,
              projected=False, relax=1.0, threads=1, any_contacts=None,
              end_sweep=_local_end_sweep, where="", timers=None):
        """Solve for the velocities v (rows: grains, ghosts after the n_owned owned
        ones) and angular velocities w ((n, 1) in 2D, (n, 3) in 3D) in place; m is the
        mass (inf: a grain with prescribed velocity), inv_inertia 1/I (0: no rotation).
        solver: "nlgs" or "jacobi"; beta: overlap correction; projected: the projected
        normal rule; relax: Jacobi relaxation. any_contacts: whether any rank has a
        contact (default: this one has); where: prefix of the warning; timers: a dict
        whose "sweeps" and "exchange" get the seconds of the sweeps and of end_sweep
        (the ghost exchange and residual reduction). Returns (sweeps,
        residual) and warns ConvergenceWarning when the residual is still >= tol/dt
        after itmax sweeps."""
        if not (len(self) > 0 if any_contacts is None else any_contacts):
            return 0, 0.0
        _k.prepare(self.kind, self.ci, self.cj, self.normal, self.gap, self.vb, v, r, m,
                   inv_inertia, dt, self.e, beta, self.W, self.wt, self.target, self.pn,
                   self.pt, threads)
        projected = int(projected)
        res, it = np.inf, 0
        timers = {} if timers is None else timers
        t_sweep = t_exchange = 0.0
        clock = time.perf_counter
        if solver == "nlgs":
            owned = np.zeros(len(v), np.int8)
            owned[:n_owned] = 1
            ghost_dv = np.zeros_like(v)
            ghost_dw = np.zeros_like(w)
            while it < itmax and not res < tol / dt:
                t0 = clock()
                res = _k.sweep_nlgs(self.kind, self.ci, self.cj, self.normal, self.vb, self.W,
                                    self.wt, self.target, v, w, r, m, inv_inertia, self.mu,
                                    projected, self.pn, self.pt, owned, ghost_dv, ghost_dw)
                t1 = clock()
                res = end_sweep(res, ghost_dv, ghost_dw)
                t_sweep += t1 - t0
                t_exchange += clock() - t1
                it += 1
        else:
            # each grain's contacts in contact order: entry 2 c + side (side 1: body j)
            start, entry = _ck.build_gather_lists(
                self.ci, np.where(self.kind == 0, self.cj, -1).astype(np.int32), len(v))
            inc = np.empty((len(self), 12))
            res_c = np.empty(len(self))
            while it < itmax and not res < tol / dt:
                t0 = clock()
                res = _k.sweep_jacobi(self.kind, self.ci, self.cj, self.normal, self.vb,
                                      self.W, self.wt, self.target, v, w, r, m, inv_inertia,
                                      self.mu, projected, relax, self.pn, self.pt, start,
                                      entry, inc, res_c, n_owned, threads)
                t1 = clock()
                res = end_sweep(res, None, None)
                t_sweep += t1 - t0
                t_exchange += clock() - t1
                it += 1
        timers["sweeps"] = timers.get("sweeps", 0.0) + t_sweep
        timers["exchange"] = timers.get("exchange", 0.0) + t_exchange
        if not res < tol / dt:
            warnings.warn(ConvergenceWarning(
                "%s%s: no convergence in itmax=%d sweeps: largest velocity correction %.6g "
                ">= tol/dt = %.6g" % (where, solver, itmax, res, tol / dt), residual=res,
                iterations=it), stacklevel=3)
        return it, res
