"""Ghost particles built in six swaps (-x, +x, -y, +y, -z, +z), LAMMPS "borders" style.

Each swap selects, from the owned particles and the ghosts of earlier axes, those
within `cutoff` of a face, and appends copies on the other side; doing the axes in
sequence makes edge and corner images come for free. On one rank a periodic face
sends to itself: the copy keeps the coordinates and gets image +-1 on that axis.
The domain-decomposition issue replaces the self-send by a buffer exchange with
the neighbor rank; the selection and the bookkeeping stay the same.
"""
import numpy as np


def periodic_images(pos, image, box_lo, box_hi, periodic, cutoff):
    """Return (src, image) of the ghosts for owned positions `pos` (n, 3) whose images
    are `image` (n, 3): src indexes the owned particle each ghost copies."""
    box_len = box_hi - box_lo
    src = np.arange(len(pos))
    img = image.copy()
    n_own = len(pos)
    for axis in range(3):
        if not periodic[axis]:
            continue
        shifted = pos[src, axis] + img[:, axis] * box_len[axis]
        new_src, new_img = [], []
        for near, shift in ((shifted < box_lo[axis] + cutoff, 1),
                            (shifted >= box_hi[axis] - cutoff, -1)):
            sel = np.flatnonzero(near)
            im = img[sel].copy()
            im[:, axis] += shift
            new_src.append(src[sel])
            new_img.append(im)
        src = np.concatenate([src] + new_src)
        img = np.concatenate([img] + new_img)
    return src[n_own:], img[n_own:]


def wrap(pos, box_lo, box_hi, periodic):
    """Wrap positions into the box on periodic axes, touching only those outside
    (so particles inside keep their exact bits)."""
    for axis in range(3):
        if periodic[axis]:
            length = box_hi[axis] - box_lo[axis]
            col = pos[:, axis]
            out = np.flatnonzero((col < box_lo[axis]) | (col >= box_hi[axis]))
            if len(out):
                col[out] -= np.floor((col[out] - box_lo[axis]) / length) * length
                # round-off can leave a value exactly on the upper face or just below lo
                col[out] = np.where(col[out] >= box_hi[axis], box_lo[axis], col[out])
                col[out] = np.where(col[out] < box_lo[axis], box_lo[axis], col[out])
