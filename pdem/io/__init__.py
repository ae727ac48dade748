"""Results of a run: parallel HDF5 frames and time series with an XDMF index
(frames.py, xdmf.py); layout in docs/output.md."""
from .frames import (CONTACT_FIELDS, DEFAULT_CONTACT_FIELDS, DEFAULT_FIELDS, PARTICLE_FIELDS,
                     ResultFile)
from .xdmf import XdmfIndex, write_xdmf

__all__ = ["ResultFile", "XdmfIndex", "write_xdmf", "PARTICLE_FIELDS", "DEFAULT_FIELDS",
           "CONTACT_FIELDS", "DEFAULT_CONTACT_FIELDS"]
