"""Contacts: state arrays (store), plane walls (walls). Kernels live in pyx/."""
