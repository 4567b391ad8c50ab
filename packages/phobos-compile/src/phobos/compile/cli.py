"""``phobos-compile``: compile a ``.ph`` file to PTX, a cubin and a launch contract.

    phobos-compile saxpy.ph --arch sm_90 -o build/          # build/saxpy.{ptx,cubin,contract.json}
    phobos-compile saxpy.ph --arch sm_90 -D BLOCK=256 --emit cuda     # or phobos, ir, gpuir, ptx

Errors in the program print like a compiler's (file:line:col, the line, a caret)
and exit with status 1; any other problem is one ``phobos-compile: error:`` line.
Set PHOBOS_DEBUG=1 to see the traceback as well.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from phobos.compile import _cli
from phobos.compile.contract import Contract
from phobos.compile.diagnostics import PhobosError
from phobos.compile.toolchain import ToolchainError, ToolchainMissingError
from phobos.compile.toolchain.arch import virtual_arch

PROG = "phobos-compile"
STAGES = ("phobos", "ir", "gpuir", "cuda", "ptx")
NEEDS_ARCH = ("gpuir", "cuda", "ptx")  # and -o: code generated for one card
BACK_END_HINT = "pip install 'phobos-compile[cuda]'"


class CommandError(Exception):
    """A command that cannot be carried out as given: one error line."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    if options.output is None and options.emit is None:
        parser.error("say where the files go (-o DIR) or which stage to print (--emit)")
    if options.output is not None and options.emit is not None:
        parser.error("-o DIR writes files and --emit prints one stage: give one of them")
    if options.arch is None and options.emit not in ("phobos", "ir"):
        what = f"--emit {options.emit}" if options.emit else "-o"
        parser.error(
            f"--arch is needed: {what} generates code for one card (sm_80, sm_90, sm_90a, ...)"
        )
    if options.cache and options.emit not in (None, "ptx"):
        parser.error("--cache holds compiled kernels: use it with -o DIR or --emit ptx")
    if options.file.suffix == ".py":
        parser.error(
            f"{options.file} is Python: phobos-compile reads .ph files (a @ph.kernel function "
            "compiles when it is launched; see docs/compiling.md)"
        )
    return _cli.run(PROG, lambda: _main(options, parser))


def _main(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        _run(options, parser)
    except (
        PhobosError,
        ToolchainError,
        CommandError,
        OSError,
        UnicodeDecodeError,
        ModuleNotFoundError,
    ) as exc:
        if os.environ.get("PHOBOS_DEBUG") == "1":
            raise
        print(_cli.paint(_describe(exc, options.file)), file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = _cli.Parser(
        prog=PROG,
        description="Compile a Phobos (.ph) file to PTX, a cubin and a launch contract per kernel.",
        epilog="Set PHOBOS_DEBUG=1 to see a traceback with an error. Colour: NO_COLOR=1 turns "
        "it off. Docs: docs/compiling.md.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_cli.version(PROG, __file__)}"
    )
    parser.add_argument("file", type=Path, help="the .ph file")
    parser.add_argument("--arch", type=_arch, help="the card: sm_80, sm_90, sm_90a, ...")
    parser.add_argument("--kernel", help="compile only this kernel (default: every kernel)")
    parser.add_argument(
        "-D",
        dest="values",
        metavar="NAME=VALUE",
        type=_value,
        action="append",
        default=[],
        help="fix a compile-time name (default: the kernel's default variant)",
    )
    parser.add_argument("-o", dest="output", type=Path, metavar="DIR", help="write files here")
    parser.add_argument("--emit", choices=STAGES, help="print one stage to stdout instead")
    parser.add_argument(
        "--index-width",
        type=int,
        choices=(32, 64),
        default=32,
        help="bits of index arithmetic (64 for tensors of 2^31 elements or more; default 32)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="take compiled kernels from the shared kernel cache, and put new ones there "
        "(needs phobos-cache; $PHOBOS_CACHE_DIR picks the folder)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print ptxas' registers, spills and shared memory for each kernel "
        "(with --cache: whether it came from the cache)",
    )
    return parser


def _arch(text: str) -> str:
    try:
        virtual_arch(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def _value(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    try:
        if not (sep and name.isidentifier()):
            raise ValueError
        return name, int(value, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}") from None


def _run(options: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    # Imported here so that `phobos-compile --help` answers at once.
    from phobos.compile import pipeline
    from phobos.compile.check import lower
    from phobos.compile.ir import format_kernel
    from phobos.compile.races import check_races
    from phobos.compile.syntax import format_module

    module = pipeline.parse_file(options.file)
    if options.emit == "phobos":
        sys.stdout.write(format_module(module))
        return
    names = [k.name for k in module.kernels]
    if not names:
        raise CommandError(f"{options.file} has no kernel to compile")
    if options.kernel is not None:
        if options.kernel not in names:
            parser.error(
                f"{options.file} has no kernel {options.kernel!r} (it has: {', '.join(names)})"
            )
        names = [options.kernel]
    variants = pipeline.variant_values(module, names, dict(options.values))
    store = _open_cache() if options.cache else None
    outputs = []  # written once every kernel has compiled, so a failure leaves no files
    for name in names:
        values = variants[name]
        lowered = lower(module, name, values)
        for warning in check_races(lowered):
            print(warning.render(), file=sys.stderr)
        if options.emit == "ir":
            _emit(format_kernel(lowered))
            continue
        spec = pipeline.default_specialization(module, name, options.index_width)
        if options.emit in ("gpuir", "cuda"):
            from phobos.compile.gpu.printer import format_kernel as format_gpu_kernel

            _, generated = pipeline.generate_kernel(
                module, name, values, arch=options.arch, spec=spec
            )
            _emit(
                format_gpu_kernel(generated.gpu_ir) if options.emit == "gpuir" else generated.source
            )
            continue
        ptx, cubin, contract = _compile(options, module, name, values, spec, store)
        if options.emit == "ptx":
            _emit(ptx)
        else:
            outputs.append((name, ptx, cubin, contract))
    for output in outputs:
        _write(options.output, *output)


def _compile(options, module, name, values, spec, store) -> tuple[str, bytes, Contract]:
    """PTX, cubin and contract, freshly compiled or through the kernel cache."""
    from phobos.compile import pipeline

    where = f"{name} ({options.arch})"
    if store is None:
        compiled = pipeline.compile_kernel(
            module, name, values, arch=options.arch, spec=spec, verbose=options.verbose
        )
        if options.verbose and compiled.resources is not None:
            print(f"{where}: {compiled.resources.summary()}", file=sys.stderr)
        return compiled.ptx, compiled.cubin, compiled.contract
    from phobos.compile.cached import compile_cached

    cached = compile_cached(module, name, values, arch=options.arch, spec=spec, cache=store)
    if options.verbose:
        how = "from the kernel cache" if cached.from_cache else "compiled into the kernel cache"
        print(f"{where}: {how}, key {cached.key}", file=sys.stderr)
    return cached.ptx, cached.cubin, cached.contract


def _open_cache():
    try:
        from phobos.cache import Cache
    except ImportError as exc:
        if not (exc.name or "").startswith("phobos.cache"):
            raise
        raise ToolchainMissingError(
            "--cache needs the phobos-cache package; install it with: pip install phobos-cache"
        ) from exc
    try:
        return Cache()
    except ValueError as exc:  # a bad $PHOBOS_CACHE_MAX_BYTES, say
        raise CommandError(f"--cache: {exc}") from None


def _emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _write(folder: Path, name: str, ptx: str, cubin: bytes, contract: Contract) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.ptx").write_text(ptx, encoding="utf-8")
    (folder / f"{name}.cubin").write_bytes(cubin)
    (folder / f"{name}.contract.json").write_text(contract.to_json() + "\n", encoding="utf-8")


def _describe(exc: Exception, file: Path) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"{PROG}: error: {file}: {_cli.describe(exc)}"
    if isinstance(exc, OSError):
        return f"{PROG}: error: {_cli.describe(exc)}"
    if isinstance(exc, ModuleNotFoundError):
        if exc.name and exc.name.split(".")[0] in ("numpy", "cuda", "nvidia"):
            return (
                f"{PROG}: error: this stage needs the compiler's back end, which needs "
                f"{exc.name.split('.')[0]}: {BACK_END_HINT}"
            )
        raise exc
    if isinstance(exc, (ToolchainError, CommandError)):
        return f"{PROG}: error: {exc}"
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
