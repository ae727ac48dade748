"""ParaView: draw the ellipsoids of a pdem result file with their orientation and
semi-axes (issue 16). Run with `pvpython docs/ellipsoid_glyphs.py results.xdmf [out.png]`
(without a display: `xvfb-run -a pvpython ...`) or paste into ParaView's Python shell
(View > Python Shell) with the path changed. `--points out.json` writes the glyphs'
vertices instead of drawing (tests/unit/test_paraview.py checks them).

pdem writes, per particle, `shape_tensor` = R diag(a1, a2, a3) R^T (an XDMF Tensor
attribute): its eigenvalues are the semi-axes and its eigenvectors the body axes, so
ParaView's Tensor Glyph filter with a sphere glyph and "extract eigenvalues" draws
each ellipsoid (the glyph sphere has radius 0.5, hence the scale factor 2). Spheres
carry r I and come out as spheres. Tested with ParaView 5.11 (Debian's `paraview`).
"""
import json
import sys

from paraview.simple import (GetActiveViewOrCreate, Render, ResetCamera, SaveScreenshot, Show,
                             TensorGlyph, XDMFReader)

args = sys.argv[1:]
points_file = None
if "--points" in args:
    i = args.index("--points")
    points_file = args[i + 1]
    del args[i:i + 2]
reader = XDMFReader(FileNames=[args[0] if args else "results.xdmf"])
glyphs = TensorGlyph(Input=reader, GlyphType="Sphere")
glyphs.Tensors = ["POINTS", "shape_tensor"]
glyphs.ExtractEigenvalues = 1
glyphs.ScaleFactor = 2.0
glyphs.GlyphType.ThetaResolution = 24
glyphs.GlyphType.PhiResolution = 16
if points_file:
    from paraview import servermanager
    from vtk.util.numpy_support import vtk_to_numpy
    points = vtk_to_numpy(servermanager.Fetch(glyphs).GetPoints().GetData())
    with open(points_file, "w") as fh:
        json.dump(points.astype(float).tolist(), fh)
    sys.exit(0)
view = GetActiveViewOrCreate("RenderView")
Show(glyphs, view)
ResetCamera()
Render()
if len(args) > 1:
    SaveScreenshot(args[1], view, ImageResolution=[1200, 900])
