"""Everything that touches torch: FX lowering and raising, the backend, the graph-break mender.

Names are imported lazily so ``fx_bridge.mend`` works without the e-graph engine's dependencies.
"""
from importlib import import_module

_EXPORTS = {
    "eqsat_backend": "fx_bridge.backend", "last_reports": "fx_bridge.backend",
    "optimize": "fx_bridge.pipeline", "Options": "fx_bridge.options",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fx_bridge' has no attribute {name!r}")
