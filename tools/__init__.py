"""Developer tools that live with the repository (``python -m tools.fuzz``)."""
