"""Launch compiled Phobos kernels through the CUDA driver with ctypes.

Load a kernel from its launch contract and cubin (or PTX), then launch it on any
arrays with ``__cuda_array_interface__`` (torch, CuPy, Numba)::

    from phobos.launch import load_kernel

    saxpy = load_kernel(contract_json, cubin=cubin_bytes)
    saxpy.launch(lambda meta: (-(-meta["N"] // meta["BLOCK"]),), (x, y, out, 2.0))

Depends on nothing but the standard library.  See docs/launching.md.
"""

from phobos.launch import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.launch.arrays import (
    HOST,
    ArrayFields,
    alignment_of,
    array_library,
    host_copy,
    host_view,
    index64_of,
    needs_index64,
    read_arguments,
    row_alignment_of,
    specialization_of,
    unit_stride_of,
)
from phobos.launch.binder import ArgumentBinder, Binding
from phobos.launch.contract import FORMAT_VERSION, LaunchContract, read_contract
from phobos.launch.driver import CudaDriver, Driver, shared_driver
from phobos.launch.errors import (
    ContractError,
    CudaError,
    DriverNotFound,
    LaunchError,
    LaunchWarning,
)
from phobos.launch.grid import call_grid, grid_dims
from phobos.launch.kernel import LoadedKernel, load_kernel
from phobos.launch.native import SteadyState, steady_call
from phobos.launch.streams import current_stream_of, library_of

# fmt: off
__all__ = [
    "FORMAT_VERSION", "HOST", "ArgumentBinder", "ArrayFields", "Binding", "ContractError",
    "CudaDriver", "CudaError", "Driver", "DriverNotFound", "LaunchContract", "LaunchError",
    "LaunchWarning", "LoadedKernel", "SteadyState", "alignment_of", "array_library", "call_grid",
    "current_stream_of", "grid_dims", "host_copy", "host_view", "index64_of", "library_of",
    "load_kernel", "needs_index64", "read_arguments", "read_contract", "row_alignment_of",
    "shared_driver", "specialization_of", "steady_call", "unit_stride_of",
]
# fmt: on
