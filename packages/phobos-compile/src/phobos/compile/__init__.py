"""The Phobos compiler."""
