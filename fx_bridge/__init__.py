"""Everything that touches torch: FX lowering and raising, the backend, the graph-break mender."""
from .backend import eqsat_backend, last_reports
from .optimize import Options, optimize

__all__ = ["eqsat_backend", "last_reports", "optimize", "Options"]
