"""``python -m phobos.launch``: whether kernels can be launched here, and on which path.

Says whether the CUDA driver is there (and its version), and whether launches take the
native fast path, and if not, why.  Exits 0 when launches can reach a GPU, 1 when they cannot
(no driver, or no GPU the driver can use).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from phobos.launch import _cli

PROG = "python -m phobos.launch"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _cli.Parser(
        prog=PROG,
        description="Say whether Phobos kernels can be launched on a GPU here, and how: the "
        "CUDA driver found (or why not) and whether the native launch path is on.",
        epilog="Without a driver, launches with numpy arrays run in the CPU interpreter "
        "(docs/launching.md). PHOBOS_NATIVE_LAUNCH=0 turns the native path off.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"phobos-launch {_cli.version('phobos-launch', __file__)}",
    )
    parser.parse_args(argv)
    return _cli.run(PROG, _report)


def _report() -> int:
    from phobos.launch.driver import shared_driver
    from phobos.launch.errors import CudaError, DriverNotFound
    from phobos.launch.native import native_status

    try:
        driver = shared_driver()
        version = driver.driver_version()
    except (DriverNotFound, CudaError) as exc:
        found = "none" if isinstance(exc, DriverNotFound) else "found, but it cannot be used"
        print(f"CUDA driver: {found} ({exc})")
        print("launches: numpy arrays run in the CPU interpreter; GPU arrays cannot launch here")
        status = native_status().removeprefix("the native launch path is ")
        print(f"native launch path: {status}; unused here without a driver")
        return 1

    print(f"CUDA driver: {version // 1000}.{version % 1000 // 10} ({version})")
    try:
        name = driver.device_name(0)
        major, minor = driver.compute_capability(0)
        print(f"device 0: {name}, sm_{major}{minor}")
    except CudaError as exc:
        print(f"device 0: none usable ({exc})")
        return 1
    status = native_status()
    print(f"native launch path: {status.removeprefix('the native launch path is ')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
