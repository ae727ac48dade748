"""Contacts: state arrays (store), plane walls (walls), faceted wall meshes (mesh,
mesh_files). Kernels live in pyx/."""
