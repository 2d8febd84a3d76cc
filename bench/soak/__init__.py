"""The soak (``python -m bench.scripts.soak``): random graphs through the backend against eager."""
