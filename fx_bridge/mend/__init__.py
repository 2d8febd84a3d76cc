"""Graph-break mender: rewrite fixable Dynamo graph breaks at source level (GraphMend, in Python).

    report = mend(model, (x,))          # rewrites loaded functions in place; report.patch.undo()
    compiled = compile(model)           # torch.compile + flush deferred prints/logs, restore traps

`python -m fx_bridge.mend module:factory --diff out.patch` does the same and writes a diff.
"""

from fx_bridge.mend.detect import Detection, Site, detect
from fx_bridge.mend.mender import MendReport, mend
from fx_bridge.mend.runtime import boundary, compile, flush

__all__ = ["Detection", "MendReport", "Site", "boundary", "compile", "detect", "flush", "mend"]
