"""Python front end: read @ph.kernel functions with ast into Phobos programs."""
