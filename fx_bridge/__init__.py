"""Everything that touches torch: FX lowering and raising, the backend, the graph-break mender.

Names are imported lazily so ``eqsat_torch.mend`` works without the e-graph engine's dependencies.
"""
from importlib import import_module

_EXPORTS = {
    "eqsat_backend": "eqsat_torch.backend", "last_reports": "eqsat_torch.backend",
    "optimize": "eqsat_torch.pipeline", "Options": "eqsat_torch.options",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'eqsat_torch' has no attribute {name!r}")
