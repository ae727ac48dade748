"""ParaView: draw the ellipsoids of a pdem result file with their orientation and
semi-axes (issue 16). Run with `pvpython docs/ellipsoid_glyphs.py results.xdmf [out.png]`
or paste into ParaView's Python shell (View > Python Shell) with the path changed.

pdem writes, per particle, `shape_tensor` = R diag(a1, a2, a3) R^T (an XDMF Tensor
attribute): its eigenvalues are the semi-axes and its eigenvectors the body axes, so
ParaView's Tensor Glyph filter with a sphere glyph and "extract eigenvalues" draws
each ellipsoid (the glyph sphere has radius 0.5, hence the scale factor 2). Spheres
carry r I and come out as spheres. Not tested here: no pvpython on the build machine.
"""
import sys

from paraview.simple import (ColorBy, GetActiveViewOrCreate, Render, ResetCamera, SaveScreenshot,
                             Show, TensorGlyph, XDMFReader)

reader = XDMFReader(FileNames=[sys.argv[1] if len(sys.argv) > 1 else "results.xdmf"])
glyphs = TensorGlyph(Input=reader, GlyphType="Sphere")
glyphs.Tensors = ["POINTS", "shape_tensor"]
glyphs.ExtractEigenvalues = 1
glyphs.ScaleFactor = 2.0
glyphs.GlyphType.ThetaResolution = 24
glyphs.GlyphType.PhiResolution = 16
view = GetActiveViewOrCreate("RenderView")
display = Show(glyphs, view)
ColorBy(display, ("POINTS", "id"))
ResetCamera()
Render()
if len(sys.argv) > 2:
    SaveScreenshot(sys.argv[2], view, ImageResolution=[1200, 900])
