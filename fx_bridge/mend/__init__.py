"""Graph-break mender: rewrite fixable Dynamo graph breaks at source level (GraphMend, in Python).

    report = mend(model, (x,))          # rewrites loaded functions in place; report.patch.undo()
    compiled = torch.compile(model)     # deferred prints/logs run in the graph, no recompiles
    compiled = compile(model)           # the same, plus trap exceptions re-raised with their type

`python -m eqsat_torch.mend module:factory --diff out.patch` does the same and writes a diff.
"""

from eqsat_torch.mend.detect import Detection, Site, detect
from eqsat_torch.mend.mender import MendReport, mend
from eqsat_torch.mend.runtime import boundary, compile

__all__ = ["Detection", "MendReport", "Site", "boundary", "compile", "detect", "mend"]
