"""inductor: see docs/architecture.md."""
