"""A bonded-particle rock (Potyondy & Cundall 2004, "A bonded-particle model for rock",
IJRMMS 41:1329): a dense packing bonded with parallel bonds, then

  (a) uniaxial compression between two platens: stress-strain curve, peak strength
      (UCS), Young's modulus (tangent and secant at 50 % of the peak), cracks
      (tension / shear) against strain;
  (b) a Brazilian test: a disk loaded across a diameter (flats over a 20 degree arc),
      sigma_t = 2 F_peak / (pi D t);
  (c) the modulus for two contact/bond stiffnesses (P&C: E is set by Ec = Ebar_c).

    python examples/rock/rock.py [--quick] [--docs docs] [--no-stiff] [--no-brazilian]
    mpirun -n 2 python -m mpi4py examples/rock/rock.py --quick    (the same numbers)

Micro-parameters are of the kind of P&C's granite (PFC3D): Ec = Ebar_c, kn/ks = 2.5,
lambda = 1, bond strengths sigma_c = tau_c with 23 % scatter, radii ratio 1.66,
contact friction 0.5. Quasi-static loading: platens move at a speed that takes ~50
wave crossings of the specimen to reach the peak, with bond and contact damping; the
check is that the two platen forces agree (printed as `platen mismatch`).
"""
import argparse
import math
import os
import time

import numpy as np
from mpi4py import MPI

import pdem

RHO = 2630.0                 # granite density (kg/m^3)
E_C = 60e9                   # contact and bond modulus Ec = Ebar_c (Pa)
K_RATIO = 2.5                # kn / ks of contacts and bonds (P&C)
SIGMA_C = 175e6              # mean bond tensile strength = cohesion (P&C: 175 +- 40 MPa)
CV = 40.0 / 175.0            # coefficient of variation of the bond strengths
MU = 0.5                     # contact friction
RMIN, RMAX = 0.6e-3, 1.0e-3  # radii, uniform (Rmax / Rmin = 1.66 as P&C)
BOND_GAP = 0.05 * RMIN       # bond every pair closer than this after packing
DAMPING = 0.3                # bond damping ratio (quasi-static loading)
CROSSINGS = 50               # wave crossings of the specimen until ~ the peak strain


def sizes(quick):
    """(UCS prism width, height), (Brazilian disk diameter, thickness) in m."""
    return ((10e-3, 20e-3), (16e-3, 8e-3)) if quick else ((18e-3, 36e-3), (30e-3, 12e-3))


def specimen(region, comm, seed=1, fraction=0.57):
    """A dense random packing of the region (pdem.pack)."""
    x, r = pdem.pack(region, lambda rng, n: rng.uniform(RMIN, RMAX, n),
                     solid_fraction=fraction, seed=seed, comm=comm, progress=False)
    return np.asarray(x), np.asarray(r)


def build(x, r, comm, stiffness=1.0, axis=2, speed=None, dt=None):
    """The bonded specimen between two platens normal to `axis` moving towards each
    other at `speed` each (default: CROSSINGS wave crossings to 0.3 % strain).
    stiffness scales Ec = Ebar_c; dt defaults to 0.1 sqrt(m_min / (kn + kn_bond A)).
    Contact kn = 4 r Ec and bond kn = Ebar_c / (2 r) with r the mean radius (P&C's
    PFC3D relations); ks = kn / 2.5."""
    ec = E_C * stiffness
    rm = r.mean()
    lo, hi = (x - r[:, None]).min(axis=0), (x + r[:, None]).max(axis=0)   # touching
    length = hi[axis] - lo[axis]
    pad = 0.2 * (hi - lo)
    dom = pdem.Domain(lo - pad, hi + pad)
    kn = 4.0 * rm * ec
    m_min = RHO * 4.0 / 3.0 * math.pi * RMIN ** 3
    k_bond = ec / (2.0 * rm) * math.pi * RMIN ** 2
    if dt is None:                                        # ~ 6 bonds/contacts per particle
        dt = 0.1 * math.sqrt(m_min / (kn + k_bond))
    sim = pdem.Simulation(dom, dt=dt, comm=comm, gravity=(0, 0, 0))
    sim.material("rock", RHO, kn=kn, kt=kn / K_RATIO, friction=MU, restitution=0.3)
    sim.add_spheres(x, r, "rock")
    bond = sim.bond_material("cement", kn=ec / (2.0 * rm), ks=ec / (2.0 * rm) / K_RATIO,
                             tensile_strength=SIGMA_C, cohesion=SIGMA_C, damping=DAMPING,
                             scatter={"distribution": "normal", "cv": CV, "seed": 7})
    n_bonds = sim.bond_contacts("cement", gap=BOND_GAP)
    if speed is None:                 # wave speed ~ sqrt(E / rho) with E ~ 0.6 Ec
        crossing = length / math.sqrt(0.6 * ec / RHO)
        speed = 0.5 * 3e-3 * length / (CROSSINGS * crossing)
    normal = np.zeros(3)
    normal[axis] = 1.0
    sim.add_plane(lo, normal, "rock", velocity=speed * normal)
    sim.add_plane(hi, -normal, "rock", velocity=-speed * normal)
    return sim, dict(n_bonds=n_bonds, speed=speed, length=length, dt=dt, kn=kn,
                     kt=kn / K_RATIO, bond=bond, lo=lo, hi=hi)


def load(sim, info, axis=2, every=50, max_strain=0.012, drop=0.6):
    """Move the platens until the load falls below `drop` x its peak (after the peak)
    or the strain reaches max_strain. Returns arrays: strain, top and bottom platen
    forces, broken bonds, per record."""
    rec = {"strain": [], "f_bottom": [], "f_top": [], "broken": []}
    peak = 0.0
    while True:
        sim.run(steps=every)
        f = sim.plane_forces()[:, axis]
        strain = 2.0 * info["speed"] * sim.time / info["length"]
        rec["strain"].append(strain)
        rec["f_bottom"].append(-f[0])
        rec["f_top"].append(f[1])
        rec["broken"].append(sim.n_broken)
        mean = 0.5 * (f[1] - f[0])
        peak = max(peak, mean)
        if strain > max_strain or mean < drop * peak:
            break
    return {k: np.array(v) for k, v in rec.items()}


def affine_modulus(sim, info, volume, axis=2):
    """An independent upper bound of the specimen's Young's modulus: every bond and
    contact spring strained by a uniform (affine) strain field without particle
    rotations (Voigt). Stiffness C_ijkl = 1/V sum l^2 [(kn - ks) n_i n_j n_k n_l +
    ks d_ik n_j n_l] (symmetrized) over bonds (kn A, ks A) and the contacts of the
    bonded pairs that touch (every touching pair is bonded: BOND_GAP >= 0);
    E = 1 / S_axis,axis. The real assembly relaxes non-affinely: E below it."""
    p = sim.particles(gather=True)
    b = sim.bonds(gather=True)
    bm = info["bond"]
    live = b["intact"]
    i1 = np.searchsorted(p["id"], b["id1"][live])
    i2 = np.searchsorted(p["id"], b["id2"][live])
    l = p["position"][i2] - p["position"][i1]
    r1, r2 = p["radius"][i1], p["radius"][i2]
    area = math.pi * (bm.radius_multiplier * np.minimum(r1, r2)) ** 2
    touch = np.linalg.norm(l, axis=1) <= r1 + r2          # a contact spring as well
    rows = [(l, bm.kn * area, bm.ks * area),
            (l[touch], np.full(touch.sum(), info["kn"]), np.full(touch.sum(), info["kt"]))]
    C = np.zeros((3, 3, 3, 3))
    d = np.eye(3)
    for l, kn, ks in rows:
        L2 = np.einsum("ki,ki->k", l, l)
        n = l / np.sqrt(L2)[:, None]
        C += np.einsum("k,ki,kj,kl,km->ijlm", L2 * (kn - ks), n, n, n, n)
        C += np.einsum("k,il,kj,km->ijlm", L2 * ks, d, n, n)
    C /= volume
    C = 0.25 * (C + C.transpose(1, 0, 2, 3) + C.transpose(0, 1, 3, 2) +
                C.transpose(1, 0, 3, 2))
    idx = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]
    w = [1, 1, 1, math.sqrt(2), math.sqrt(2), math.sqrt(2)]       # Mandel notation
    M = np.array([[w[a] * w[b_] * C[idx[a] + idx[b_]] for b_ in range(6)] for a in range(6)])
    return 1.0 / np.linalg.inv(M)[axis, axis]


def moduli(strain, stress):
    """Peak, tangent modulus (fit over 40-60 % of the peak, before it) and secant
    modulus at 50 % of the peak."""
    k = int(np.argmax(stress))
    peak = stress[k]
    pre = slice(0, k + 1)
    s, e = stress[pre], strain[pre]
    band = (s >= 0.4 * peak) & (s <= 0.6 * peak)
    tangent = np.polyfit(e[band], s[band], 1)[0] if band.sum() >= 2 else float("nan")
    j = int(np.argmax(s >= 0.5 * peak))
    e50 = np.interp(0.5 * peak, s[j - 1:j + 1], e[j - 1:j + 1]) if j > 0 else e[0]
    return peak, e[k], tangent, 0.5 * peak / e50


def ucs(x, r, comm, size, stiffness=1.0, max_strain=0.012, drop=0.6, speed=None, dt=None):
    """Uniaxial compression of the prism; returns a dict of results."""
    t0 = time.perf_counter()
    sim, info = build(x, r, comm, stiffness, speed=speed, dt=dt)
    area = size[0] ** 2
    e_aff = affine_modulus(sim, info, area * size[1])
    rec = load(sim, info, max_strain=max_strain, drop=drop)
    stress = 0.5 * (rec["f_top"] + rec["f_bottom"]) / area
    peak, e_peak, tangent, secant = moduli(rec["strain"], stress)
    k = int(np.argmax(stress))
    half = int(np.argmax(stress >= 0.5 * peak))
    mismatch = lambda i: abs(rec["f_top"][i] - rec["f_bottom"][i]) / (area * stress[i])
    b = sim.bonds(gather=True)
    broken = ~b["intact"]
    return dict(sim=sim, info=info, rec=rec, stress=stress, peak=peak, strain_peak=e_peak,
                E_tangent=tangent, E_secant=secant, E_affine=e_aff,
                mismatch_half=mismatch(half), mismatch_peak=mismatch(k),
                n_bonds=info["n_bonds"], n_broken=int(broken.sum()),
                tension=int((b["mode"][broken] == 1).sum()),
                shear=int((b["mode"][broken] == 2).sum()),
                crack_strain=2 * info["speed"] * b["broken_time"][broken] / info["length"],
                crack_mode=b["mode"][broken], crack_point=b["point"][broken],
                positions=sim.particles(gather=True)["position"], steps=sim.step_count,
                seconds=time.perf_counter() - t0)


def disk_region(D, t, arc=20.0):
    """The Brazilian disk (axis y), flattened where the platens touch it over a loading
    arc of `arc` degrees: on a round disk only one or two spheres touch each platen and
    the disk crushes there instead of splitting (the invalid failure near the jaws that
    ISRM's curved jaws avoid)."""
    h = 0.5 * D * math.cos(math.radians(0.5 * arc))
    return (pdem.Cylinder((0, -t / 2, 0), (0, 1, 0), D / 2, t) &
            pdem.Box((-D, -t, -h), (D, t, h)))


def brazilian(x, r, comm, size):
    """A disk (axis y) squeezed between platens normal to z: sigma_t = 2 F / (pi D t)."""
    t0 = time.perf_counter()
    sim, info = build(x, r, comm, axis=2)
    rec = load(sim, info, max_strain=0.02, drop=0.5)
    force = 0.5 * (rec["f_top"] + rec["f_bottom"])
    k = int(np.argmax(force))
    D, t = size
    b = sim.bonds(gather=True)
    broken = ~b["intact"]
    return dict(sim=sim, info=info, rec=rec, force=force, f_peak=force[k],
                strain_peak=rec["strain"][k],
                crack_strain=2 * info["speed"] * b["broken_time"][broken] / info["length"],
                sigma_t=2.0 * force[k] / (math.pi * D * t),
                mismatch_peak=abs(rec["f_top"][k] - rec["f_bottom"][k]) / force[k],
                n_bonds=info["n_bonds"], n_broken=int(broken.sum()),
                tension=int((b["mode"][broken] == 1).sum()),
                shear=int((b["mode"][broken] == 2).sum()),
                crack_mode=b["mode"][broken], crack_point=b["point"][broken],
                positions=sim.particles(gather=True)["position"], steps=sim.step_count,
                seconds=time.perf_counter() - t0)


def plot(u, u2, bz, docs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for res, name in ((u, "Ec = %.0f GPa" % (E_C / 1e9)), (u2, "Ec = %.0f GPa" % (2 * E_C / 1e9))):
        if res is not None:
            ax[0].plot(100 * res["rec"]["strain"], res["stress"] / 1e6, label=name)
    ax[0].set_xlabel("axial strain (%)")
    ax[0].set_ylabel("axial stress (MPa)")
    ax[0].set_title("uniaxial compression: UCS %.0f MPa, E %.1f GPa"
                    % (u["peak"] / 1e6, u["E_tangent"] / 1e9))
    ax[0].legend()
    ax2 = ax[1]
    for mode, name, col in ((1, "tension", "tab:red"), (2, "shear", "tab:blue")):
        e = np.sort(u["crack_strain"][u["crack_mode"] == mode])
        ax2.plot(100 * e, np.arange(1, len(e) + 1), color=col, label=name)
    ax2.set_xlabel("axial strain (%)")
    ax2.set_ylabel("broken bonds")
    ax2.set_title("cracks against strain (%d of %d bonds)" % (u["n_broken"], u["n_bonds"]))
    ax2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "rock_ucs.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(1, 2, figsize=(10, 5.5),
                           gridspec_kw={"width_ratios": [1, 1.5]})
    for a, res, title in ((ax[0], u, "UCS prism (x-z)"), (ax[1], bz, "Brazilian disk (x-z)")):
        # all cracks projected on x-z; large and opaque: broken by the peak load
        if res is None:
            continue
        p = res["positions"]
        a.scatter(p[:, 0] * 1e3, p[:, 2] * 1e3, s=4, c="0.9", linewidths=0)
        early = res["crack_strain"] <= res["strain_peak"]
        for mode, name, col in ((1, "tension", "tab:red"), (2, "shear", "tab:blue")):
            for sel, size, alpha, when in ((early, 9, 1.0, "to the peak"),
                                           (~early, 4, 0.45, "after")):
                q = res["crack_point"][(res["crack_mode"] == mode) & sel]
                a.scatter(q[:, 0] * 1e3, q[:, 2] * 1e3, s=size, c=col, alpha=alpha,
                          linewidths=0, label="%s, %s (%d)" % (name, when, len(q)))
        a.set_aspect("equal")
        a.set_xlabel("x (mm)")
        a.set_ylabel("z (mm)")
        a.set_title(title)
        a.legend(loc="lower right", fontsize=7, markerscale=2, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "rock_cracks.png"), dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small specimens (~500 spheres)")
    ap.add_argument("--docs", default=None, help="folder for rock_ucs.png, rock_cracks.png")
    ap.add_argument("--no-brazilian", action="store_true")
    ap.add_argument("--no-stiff", action="store_true", help="skip the run with 2 Ec")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    prism, disk = sizes(args.quick)
    x, r = specimen(pdem.Box((0, 0, 0), (prism[0], prism[0], prism[1])), comm)
    say("UCS prism %g x %g x %g mm: %d spheres" % (1e3 * prism[0], 1e3 * prism[0],
                                                  1e3 * prism[1], len(r)))
    u = ucs(x, r, comm, prism)
    say("  %d bonds (%.2f per particle), dt %.3g s, platen speed %.3g m/s, %d steps, %.0f s"
        % (u["n_bonds"], 2 * u["n_bonds"] / len(r), u["info"]["dt"], u["info"]["speed"],
           u["steps"], u["seconds"]))
    say("  UCS %.1f MPa at strain %.3f %%; E tangent %.1f GPa, secant %.1f GPa (50 %% of "
        "peak); affine bound %.1f GPa" % (u["peak"] / 1e6, 100 * u["strain_peak"],
                                          u["E_tangent"] / 1e9, u["E_secant"] / 1e9,
                                          u["E_affine"] / 1e9))
    say("  cracks %d at the peak, %d at the end (tension %d, shear %d); platen mismatch "
        "%.2f %% at 50 %% of peak, %.2f %% at peak"
        % (u["rec"]["broken"][np.argmax(u["stress"])], u["n_broken"], u["tension"],
           u["shear"], 100 * u["mismatch_half"], 100 * u["mismatch_peak"]))
    u2 = None
    if not args.no_stiff:
        # the same platen speed (so not a mere change of time unit), dt / sqrt(2)
        u2 = ucs(x, r, comm, prism, stiffness=2.0, max_strain=0.01, drop=0.6,
                 speed=u["info"]["speed"], dt=u["info"]["dt"] / math.sqrt(2.0))
        say("UCS prism, Ec x 2: E tangent %.1f GPa, secant %.1f GPa: ratio %.3f, %.3f "
            "(Ec ratio 2); UCS %.1f MPa" % (u2["E_tangent"] / 1e9, u2["E_secant"] / 1e9,
                                           u2["E_tangent"] / u["E_tangent"],
                                           u2["E_secant"] / u["E_secant"], u2["peak"] / 1e6))
    bz = None
    if not args.no_brazilian:
        D, t = disk
        xd, rd = specimen(disk_region(D, t), comm, seed=2, fraction=0.55)
        bz = brazilian(xd, rd, comm, disk)
        say("Brazilian disk D %g mm, t %g mm: %d spheres, %d bonds, %d steps, %.0f s"
            % (1e3 * D, 1e3 * t, len(rd), bz["n_bonds"], bz["steps"], bz["seconds"]))
        say("  F peak %.0f N, sigma_t %.1f MPa; cracks %d at the peak, %d at the end "
            "(tension %d, shear %d); platen mismatch %.2f %% at peak"
            % (bz["f_peak"], bz["sigma_t"] / 1e6, bz["rec"]["broken"][np.argmax(bz["force"])],
               bz["n_broken"], bz["tension"], bz["shear"], 100 * bz["mismatch_peak"]))
        say("UCS / sigma_t = %.1f (parallel bonds: low; granite ~10-20, docs/bonds.md)"
            % (u["peak"] / bz["sigma_t"]))
    if args.docs and comm.rank == 0:
        plot(u, u2, bz, args.docs)
        say("wrote %s/rock_ucs.png, rock_cracks.png" % args.docs)


if __name__ == "__main__":
    main()
