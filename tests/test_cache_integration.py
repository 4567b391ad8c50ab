"""Compiled kernels go through the shared cache: a second process does not compile again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

COMPILE = """
import json, sys
sys.path.insert(0, {root!r})
from tests.gpu.saxpy_kernel import saxpy
import phobos.compile.pipeline as pipeline

calls = []
real = pipeline.compile_kernel
def counting(*args, **kwargs):
    calls.append(1)
    return real(*args, **kwargs)
pipeline.compile_kernel = counting
import phobos.compile.cached as cached
cached.compile_kernel = counting

compiled = saxpy.compile(arch="sm_90", BLOCK=256)
print(json.dumps({{"from_cache": compiled.from_cache, "compiles": len(calls),
                  "cubin": len(compiled.cubin), "entry": compiled.contract.entry}}))
"""


def compile_in_a_new_process(cache_dir: Path) -> dict:
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_takes_the_kernel_from_the_cache(tmp_path):
    first = compile_in_a_new_process(tmp_path)
    assert first == {**first, "from_cache": False, "compiles": 1}
    assert first["cubin"] > 0 and first["entry"] == "phobos_saxpy"
    second = compile_in_a_new_process(tmp_path)
    assert second == {**first, "from_cache": True, "compiles": 0}


def test_a_corrupted_cubin_is_rebuilt_with_a_warning(tmp_path):
    compile_in_a_new_process(tmp_path)
    (cubin,) = list(tmp_path.rglob("kernel.cubin"))
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0x01
    cubin.chmod(0o600)
    cubin.write_bytes(bytes(data))
    with pytest.warns(Warning, match="sha256|hash|corrupt|damaged|mismatch"):
        from phobos.cache import Cache
        from phobos.compile.cached import compile_cached
        from phobos.frontend import translate_file

        program = translate_file(ROOT / "tests" / "gpu" / "saxpy_kernel.py")
        rebuilt = compile_cached(
            program.module, "saxpy", {"BLOCK": 256}, arch="sm_90", cache=Cache(tmp_path)
        )
    assert not rebuilt.from_cache
    assert compile_in_a_new_process(tmp_path)["from_cache"] is True


def test_a_contract_the_compiler_cannot_read_is_rebuilt_with_a_warning(tmp_path):
    """An entry whose files match their sha256 but whose contract is not this compiler's
    (another writer's): a miss, removed and compiled again, never an exception."""
    import hashlib

    from phobos.cache import Cache
    from phobos.compile.cached import compile_cached
    from phobos.frontend import translate_file

    first = compile_in_a_new_process(tmp_path)
    (contract,) = list(tmp_path.rglob("contract.json"))
    data = json.dumps({"format_version": 999, "kernel": "saxpy"}).encode()
    contract.write_bytes(data)
    manifest_path = contract.with_name("manifest.json")
    manifest = json.loads(manifest_path.read_text())
    for spec in manifest["files"]:
        if spec["name"] == "contract.json":
            spec.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest_path.write_text(json.dumps(manifest))

    program = translate_file(ROOT / "tests" / "gpu" / "saxpy_kernel.py")
    with pytest.warns(Warning, match="holds no kernel this compiler can read"):
        rebuilt = compile_cached(
            program.module, "saxpy", {"BLOCK": 256}, arch="sm_90", cache=Cache(tmp_path)
        )
    assert not rebuilt.from_cache and rebuilt.contract.entry == first["entry"]
    assert compile_in_a_new_process(tmp_path)["from_cache"] is True
