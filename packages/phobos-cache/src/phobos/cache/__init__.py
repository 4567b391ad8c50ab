"""The on-disk Phobos kernel cache."""
