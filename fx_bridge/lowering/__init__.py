"""lowering: see docs/architecture.md."""
