"""scale: see docs/architecture.md."""
