"""Launch compiled Phobos kernels through the CUDA driver with ctypes.

Load a kernel from its launch contract and cubin (or PTX), then launch it on any
arrays with ``__cuda_array_interface__`` (torch, CuPy, Numba)::

    from phobos.launch import load_kernel

    saxpy = load_kernel(contract_json, cubin=cubin_bytes)
    saxpy.launch(lambda meta: (-(-meta["N"] // meta["BLOCK"]),), (x, y, out, 2.0))

Depends on nothing but the standard library.  See docs/launching.md.
"""

from phobos.launch import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.launch.binder import Binding
from phobos.launch.contract import FORMAT_VERSION, LaunchContract, read_contract
from phobos.launch.driver import CudaDriver, Driver, shared_driver
from phobos.launch.errors import (
    ContractError,
    CudaError,
    DriverNotFound,
    LaunchError,
    LaunchWarning,
)
from phobos.launch.kernel import LoadedKernel, load_kernel
from phobos.launch.specialization import alignment_of, needs_index64, specialization_of

__all__ = [
    "FORMAT_VERSION",
    "Binding",
    "ContractError",
    "CudaDriver",
    "CudaError",
    "Driver",
    "DriverNotFound",
    "LaunchContract",
    "LaunchError",
    "LaunchWarning",
    "LoadedKernel",
    "alignment_of",
    "load_kernel",
    "needs_index64",
    "read_contract",
    "shared_driver",
    "specialization_of",
]
