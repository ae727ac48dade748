"""Domain decomposition: ghost particles (periodic images now, MPI neighbors next)."""
