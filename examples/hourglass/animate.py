"""Pictures of an hourglass run (the course's hourglassAnimate.py) from the HDF5 file
that examples/hourglass/run.py writes, with matplotlib (no display needed):

    python examples/hourglass/animate.py results/hourglass/hourglass.h5 \
        [--frames 0,25,50,-1] [--out-dir DIR] [--format auto|mp4|gif] [--fps 25]

Writes beside the HDF5 file (or in --out-dir), named after it:
  <name>.mp4 (when ffmpeg is on the PATH) or <name>.gif: the animation of every frame
      (--stride to skip some), disks coloured by speed;
  <name>_frames.png: the chosen frames side by side (--frames, negative counts from
      the end; default four frames spread over the run);
  <name>_flow.png: mass below the neck against time, with the straight line fitted
      over the middle 60 % of the discharge (flow rate and R^2 in the legend).
"""
import argparse
import os
import shutil
import sys

import h5py
import numpy as np

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt                                   # noqa: E402
from matplotlib import animation                                  # noqa: E402
from matplotlib.collections import EllipseCollection, LineCollection  # noqa: E402


def read(path):
    """(attrs dict, walls (x0, x1), frame names, series dict) of a run's file."""
    with h5py.File(path, "r") as h5:
        if h5.attrs.get("format") != "pdem-hourglass":
            raise SystemExit("animate.py: %s is not an hourglass result file (format %r)"
                             % (path, h5.attrs.get("format")))
        attrs = dict(h5.attrs)
        walls = h5["walls/x0"][...], h5["walls/x1"][...]
        names = sorted(h5["frames"])
        series = {k: h5["series"][k][...] for k in h5["series"]}
    return attrs, walls, names, series


def load_frame(h5, name):
    """(time, position, velocity, radius) of a frame, rows sorted by grain id (under
    MPI the rows are in rank order)."""
    g = h5["frames"][name]
    order = np.argsort(g["id"][...], kind="stable")
    return (float(g.attrs["time"]), g["position"][...][order], g["velocity"][...][order],
            g["radius"][...][order])


class Scene:
    """One axes with the walls and the disks of a frame; update() moves them."""

    def __init__(self, ax, walls, vmax):
        x0, x1 = walls
        ax.add_collection(LineCollection(np.stack([x0, x1], axis=1), colors="k",
                                         linewidths=1.2))
        lo = np.minimum(x0, x1).min(axis=0)
        hi = np.maximum(x0, x1).max(axis=0)
        pad = 0.03 * (hi - lo).max()
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        ax.set_aspect("equal")
        ax.set_axis_off()
        self.ax, self.vmax, self.disks = ax, vmax, None
        self.title = ax.set_title("")

    def update(self, t, x, v, r):
        speed = np.sqrt((v ** 2).sum(axis=1))
        if self.disks is None:
            self.disks = EllipseCollection(2 * r, 2 * r, np.zeros_like(r), units="xy",
                                           offsets=x, offset_transform=self.ax.transData,
                                           cmap="viridis", edgecolors="k", linewidths=0.2)
            self.disks.set_clim(0.0, self.vmax)
            self.ax.add_collection(self.disks)
        else:
            self.disks.set_offsets(x)
            self.disks.set_widths(2 * r)
            self.disks.set_heights(2 * r)
        self.disks.set_array(speed)
        self.title.set_text("t = %.3f s" % t)
        return self.disks, self.title


def speed_scale(h5, names):
    """Colour scale of the speeds: 95th percentile of the speeds of a few frames."""
    picks = names[:: max(1, len(names) // 10)]
    s = np.concatenate([np.sqrt((h5["frames"][n]["velocity"][...] ** 2).sum(axis=1))
                        for n in picks])
    return float(np.percentile(s, 95)) if len(s) else 1.0


def chosen(names, spec):
    if spec is None:
        n = len(names)
        return sorted(set(int(round(k)) for k in np.linspace(0, n - 1, min(4, n))))
    out = []
    for w in spec.split(","):
        k = int(w)
        if not -len(names) <= k < len(names):
            raise SystemExit("animate.py: frame %d does not exist (the file has %d frames)"
                             % (k, len(names)))
        out.append(k % len(names))
    return out


def frames_png(path, out, walls, names, picks, vmax):
    with h5py.File(path, "r") as h5:
        fig, axes = plt.subplots(1, len(picks), figsize=(2.6 * len(picks) + 0.8, 5.2),
                                 squeeze=False)
        for ax, k in zip(axes[0], picks):
            scene = Scene(ax, walls, vmax)
            scene.update(*load_frame(h5, names[k]))
        fig.colorbar(scene.disks, ax=axes[0].tolist(), label="speed (m/s)", shrink=0.8)
        fig.savefig(out, dpi=130)
        plt.close(fig)


def flow_png(out, attrs, series):
    t, m = series["time"], series["mass_below"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(t, m, color="C0", lw=1.5, label="mass below the neck")
    rate, icpt = float(attrs["flow_rate"]), float(attrs["fit_intercept"])
    t0, t1 = float(attrs["fit_t0"]), float(attrs["fit_t1"])
    if np.isfinite(rate):
        tt = np.array([t0, t1])
        ax.plot(tt, rate * tt + icpt, "--", color="C3", lw=2,
                label="fit over 20-80 %% of the mass: %.4g kg/s, R$^2$ = %.4f"
                      % (rate, float(attrs["flow_rate_r2"])))
    ax.axhline(float(attrs["total_mass"]), color="0.6", lw=0.8, ls=":", label="total mass")
    ax.set_xlabel("time since the neck opened (s)")
    ax.set_ylabel("mass (kg)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def movie(path, out, walls, names, vmax, fps, writer):
    with h5py.File(path, "r") as h5:
        fig, ax = plt.subplots(figsize=(4.0, 6.0))
        scene = Scene(ax, walls, vmax)
        scene.update(*load_frame(h5, names[0]))
        fig.colorbar(scene.disks, ax=ax, label="speed (m/s)", shrink=0.7)
        fig.tight_layout()
        anim = animation.FuncAnimation(fig, lambda k: scene.update(*load_frame(h5, names[k])),
                                       frames=len(names), blit=False)
        if writer == "mp4":
            anim.save(out, writer=animation.FFMpegWriter(fps=fps, bitrate=1800), dpi=100)
        else:
            anim.save(out, writer=animation.PillowWriter(fps=fps), dpi=80)
        plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("h5", help="result file of examples/hourglass/run.py")
    p.add_argument("--out-dir", default=None, help="folder of the pictures (default: the "
                                                   "HDF5 file's)")
    p.add_argument("--frames", default=None,
                   help="comma-separated frame numbers for the PNG (negative from the end)")
    p.add_argument("--format", choices=("auto", "mp4", "gif", "none"), default="auto",
                   help="animation format: auto = mp4 when ffmpeg exists, else gif")
    p.add_argument("--fps", type=int, default=25)
    p.add_argument("--stride", type=int, default=1, help="animate every n-th frame")
    args = p.parse_args(argv)
    attrs, walls, names, series = read(args.h5)
    if not names:
        raise SystemExit("animate.py: %s has no frame" % args.h5)
    folder = args.out_dir or os.path.dirname(os.path.abspath(args.h5))
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, os.path.splitext(os.path.basename(args.h5))[0])
    with h5py.File(args.h5, "r") as h5:
        vmax = speed_scale(h5, names)
    written = []
    out = stem + "_frames.png"
    frames_png(args.h5, out, walls, names, chosen(names, args.frames), vmax)
    written.append(out)
    out = stem + "_flow.png"
    flow_png(out, attrs, series)
    written.append(out)
    fmt = args.format
    if fmt == "auto":
        fmt = "mp4" if shutil.which("ffmpeg") else "gif"
    if fmt != "none":
        out = stem + "." + fmt
        movie(args.h5, out, walls, names[:: max(1, args.stride)], vmax, args.fps, fmt)
        written.append(out)
    for w in written:
        print("wrote %s" % w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
