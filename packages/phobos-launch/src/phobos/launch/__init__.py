"""Launch compiled Phobos kernels through the CUDA driver with ctypes."""
