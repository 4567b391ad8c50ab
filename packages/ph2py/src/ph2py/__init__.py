"""Convert .ph files to the Python spelling."""
