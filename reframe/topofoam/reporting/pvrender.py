"""Draw one field of a decomposed OpenFOAM case at its last time (run by pvpython).

    pvpython pvrender.py CASE.foam FIELD LOW HIGH OUT.png

LOW/HIGH fix the colour range, so that two images drawn with the same range compare.
Debian's ParaView renders off-screen only through an X server: the report runs this under
xvfb-run. Kept free of the project's imports (pvpython has its own interpreter).
"""

import sys

from paraview.simple import (
    ColorBy,
    GetActiveViewOrCreate,
    GetColorTransferFunction,
    OpenFOAMReader,
    SaveScreenshot,
    Show,
)


def main(case, field, low, high, out):
    reader = OpenFOAMReader(FileName=case)
    reader.CaseType = "Decomposed Case"
    reader.MeshRegions = ["internalMesh"]
    reader.CellArrays = [field]
    reader.UpdatePipelineInformation()
    times = list(reader.TimestepValues or [0.0])
    view = GetActiveViewOrCreate("RenderView")
    view.ViewTime = max(times)
    view.ViewSize = [640, 400]
    view.OrientationAxesVisibility = 0
    shown = Show(reader, view)
    ColorBy(shown, ("CELLS", field, "Magnitude"))
    lut = GetColorTransferFunction(field)
    lut.RescaleTransferFunction(float(low), float(high))
    lut.AutomaticRescaleRangeMode = "Never"
    shown.SetScalarBarVisibility(view, True)
    view.ResetCamera()
    SaveScreenshot(out, view, ImageResolution=[640, 400])


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
