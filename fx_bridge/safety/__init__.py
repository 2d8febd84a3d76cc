"""safety: see docs/architecture.md."""
