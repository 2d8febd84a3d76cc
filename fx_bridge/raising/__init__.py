"""raising: see docs/architecture.md."""
