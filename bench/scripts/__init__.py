"""Standalone measurements: `python -m bench.scripts.NAME` (and h200_session.sh, the GPU runs).
They import the harness in bench/; nothing in bench/ imports them."""
