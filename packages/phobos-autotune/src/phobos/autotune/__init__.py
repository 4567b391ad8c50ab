"""Search a kernel's @autotune space."""
