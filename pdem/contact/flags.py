"""L6Geom option flags of the contact kernels (pyx/l6geom.pxd): the approximations
of seed 000 and noRatch's branch vectors r n."""
APPROX = {"mid_normal": 1, "no_renorm_mid_normal": 2, "mid_trsf": 4, "no_renorm_trsf": 8}
NO_RATCH = 16
