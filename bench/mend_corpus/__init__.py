"""mend_corpus: see docs/architecture.md."""
