"""Two users on one machine (docs/cache.md, section 1): what another user plants in a cache
root you share is never loaded, neither a native launcher extension nor a cache entry; a root
another user owns is used not at all, with one warning; a shared cache is read only when its
owner pinned it and you named that owner.

The other user is ``nobody`` (uid 65534): a forked child of this process drops to it with
``setgid``/``setuid``, so the tests need root (as CI runs them).  The child only writes files
with modules this process already imported: it could not read the Python installation here
(under /root), let alone run a new interpreter.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd  # noqa: F401  (imported here so that the child, as nobody, never has to)
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phobos.cache import CONTRACT_FILE, CUBIN_FILE, Cache, CacheWarning, cache_key
from phobos.cache.cli import main as cache_cli

ROOT = Path(__file__).resolve().parents[1]
OTHER = 65534  # nobody

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="plays two users: needs root, to become another user (uid 65534) in a forked child",
)


def as_other_user(plant: Callable[[], None], uid: int = OTHER) -> None:
    """Run ``plant`` in a forked child that is ``uid`` (and the same gid), and wait for it."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.umask(0o022)
            plant()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user's child failed (see stderr)"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder both users can reach, as /tmp is: sticky and world-writable, outside the
    tests' own (private) temporary folders."""
    folder = Path(tempfile.mkdtemp(prefix="phobos-two-users-"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


ROOTS = ["world-writable root", "root of the other user's"]


def make_root(shared: Path, kind: str) -> Path:
    """The shared cache root: made by you and left open to everyone (the GPU suite's old
    /tmp/phobos-cache), or made by the other user."""
    root = shared / "cache"
    if kind == ROOTS[0]:
        root.mkdir()
        os.chmod(root, 0o777)
    else:
        as_other_user(lambda: root.mkdir(mode=0o755))
        assert root.stat().st_uid == OTHER
    # Even the other user's own Phobos now refuses the world-writable root, so planting is by
    # hand (``_plant_entry``, ``plant``), as any program following docs/cache.md can.
    return root


def _one_line_warnings(stderr: str, category: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert all(category in line for line in lines), stderr  # nothing but the one-line warning
    return lines


# -- the native launcher extension ------------------------------------------------------------

PLANTED_C = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    int fd = open(MARKER, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
}
"""


def planted_extension(tmp_path: Path, marker: Path) -> bytes:
    """A shared library that, once loaded, creates ``marker``: the other user's code."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc to build the planted library with")
    source = tmp_path / "planted.c"
    source.write_text(PLANTED_C)
    library = tmp_path / "planted.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f'-DMARKER="{marker}"', str(source), "-o", str(library)],
        check=True,
    )
    return library.read_bytes()


@pytest.mark.parametrize("kind", ROOTS)
def test_a_planted_native_extension_is_not_loaded(shared: Path, tmp_path: Path, kind: str):
    from phobos.launch.native import DIGEST_SUFFIX, extension_name

    marker = tmp_path / "the-planted-code-ran"
    library = planted_extension(tmp_path, marker)
    root = make_root(shared, kind)
    name = extension_name()  # predictable: a hash of the shipped source, Python and compiler

    def plant() -> None:
        native = root / "native"
        native.mkdir(mode=0o755, exist_ok=True)
        (native / name).write_bytes(library)
        digest = hashlib.sha256(library).hexdigest()  # and the record of it, to match
        (native / (name + DIGEST_SUFFIX)).write_text(digest + "\n")

    as_other_user(plant)
    done = subprocess.run(
        [sys.executable, "-m", "phobos.launch"],
        env={**os.environ, "PHOBOS_CACHE_DIR": str(root), "PHOBOS_NATIVE_LAUNCH": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: no CUDA driver here (CI)
    assert "Traceback" not in done.stderr
    assert not marker.exists(), "the other user's library was loaded"
    (warning,) = _one_line_warnings(done.stderr, "python -m phobos.launch: warning: ")
    assert f"not loading the native launcher from {root / 'native'}" in warning
    assert "owned by uid 65534" in warning or "writable by others" in warning
    assert "private temporary folder" in warning
    assert "native launch path: on" in done.stdout  # built privately instead
    assert "built privately for this process" in done.stdout
    assert (root / "native" / name).read_bytes() == library  # not theirs to touch


# -- cache entries ---------------------------------------------------------------------------

COMPILE = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
from tests.gpu.saxpy_kernel import saxpy

compiled = saxpy.compile(arch="sm_90", BLOCK=256)
print(json.dumps({{"from_cache": compiled.from_cache, "key": compiled.key,
                  "cubin": hashlib.sha256(compiled.cubin).hexdigest(),
                  "block": list(compiled.contract.block)}}))
"""


def compile_saxpy(cache_dir: Path) -> tuple[dict, str]:
    """Compile saxpy in a new process whose cache is ``cache_dir``: its result and stderr."""
    done = subprocess.run(
        [sys.executable, "-c", COMPILE.format(root=str(ROOT))],
        env={**os.environ, "PHOBOS_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def tampered(files: dict[str, bytes]) -> dict[str, bytes]:
    """A cubin of the other user's, and a contract that misdescribes the launch."""
    contract = json.loads(files[CONTRACT_FILE])
    contract["block"] = [1024, 1, 1]
    return {
        **files,
        CUBIN_FILE: b"\x7fELF the other user's cubin",
        CONTRACT_FILE: json.dumps(contract).encode(),
    }


@pytest.mark.parametrize("kind", ROOTS)
def test_a_planted_kernel_is_not_served(shared: Path, tmp_path: Path, kind: str):
    honest, _ = compile_saxpy(tmp_path / "private")  # the kernel, and the project's own record
    entry = Cache(tmp_path / "private").get(honest["key"])
    record, files = dict(entry.record), dict(entry.files)
    root = make_root(shared, kind)

    def plant() -> None:  # by hand, as docs/cache.md says: an entry that checks out, to itself
        _plant_entry(root, honest["key"], record, tampered(files))

    as_other_user(plant)
    result, stderr = compile_saxpy(root)
    assert result["from_cache"] is False  # compiled here, not taken from the planted entry
    assert result["cubin"] == honest["cubin"] and result["block"] == honest["block"]
    (warning,) = _one_line_warnings(stderr, "CacheWarning")
    assert f"not using the cache folder: {root}" in warning and "in memory only" in warning
    planted_cubin = next(root.rglob(CUBIN_FILE))
    assert planted_cubin.read_bytes() == b"\x7fELF the other user's cubin"  # left alone


def test_a_root_of_the_other_user_falls_back_with_one_warning(shared: Path, kernel_files):
    root = shared / "cache"
    as_other_user(lambda: Cache(root).put(*kernel_files("planted", b"theirs")))
    assert root.stat().st_uid == OTHER
    key, record, files = kernel_files("planted", b"ours")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = Cache(root)
        entry, built = first.get_or_build(key, record, lambda: files)
        second = Cache(root)
        assert second.get(key) is entry  # one memory store for the root, in this process
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(said) == 1 and str(root) in said[0] and "owned by uid 65534" in said[0]
    assert built and entry.read(CUBIN_FILE) == b"ours" and entry.path is None
    assert first.refused is not None and first.in_memory


@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_the_cli_on_the_other_user_s_root_is_one_line(shared: Path, kernel_files, mode, capsys):
    root = shared / "cache"

    def plant() -> None:
        Cache(root).put(*kernel_files("planted", b"theirs"))
        os.chmod(root, mode)

    as_other_user(plant)
    for command in (["list"], ["verify"], ["info", "0"], ["clear"]):
        assert cache_cli(["--root", str(root), *command]) == 1
        captured = capsys.readouterr()
        (line,) = captured.err.splitlines()
        assert line.startswith(f"phobos-cache: error: not using {root} is owned by uid 65534")
    assert len(list(root.rglob(CUBIN_FILE))) == 1  # `clear` removed nothing of theirs


@pytest.mark.parametrize("owner", [0, OTHER - 1], ids=["root's", "a third user's"])
def test_a_root_you_cannot_enter_is_no_error(shared: Path, kernel_files, owner: int, capfd):
    """For once the other user is the victim: a 0700 root it cannot enter (the issue's
    PermissionError on every compile, and a traceback from ``phobos-cache list``)."""
    root = shared / "cache"
    as_other_user(lambda: root.mkdir(mode=0o700), uid=owner)
    key, record, files = kernel_files("k", b"mine")

    def use() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entry, built = Cache(root).get_or_build(key, record, lambda: files)
            assert built and entry.path is None and entry.read(CUBIN_FILE) == b"mine"
            assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
            listed = cache_cli(["--root", str(root), "list"])
        assert listed == 1  # a cache it cannot read is an error for the command line

    as_other_user(use)
    err = capfd.readouterr().err
    assert "Traceback" not in err


def test_an_entry_planted_in_your_own_loose_root_is_refused(
    tmp_path: Path, shared: Path, kernel_files
):
    """An older Phobos left ``v1`` writable by others (the umask): what they put there is
    not yours, so it is not used: the entry is removed and built again, their shard put aside."""
    root = shared / "mine"
    key, record, files = kernel_files("k", b"ours")
    Cache(root)
    os.chmod(root, 0o755)
    os.chmod(root / "v1", 0o777)
    as_other_user(lambda: _plant_entry(root, key, record, tampered_cubin(files)))
    with pytest.warns(CacheWarning, match="owned by uid 65534") as caught:
        cache = Cache(root)
        entry, built = cache.get_or_build(key, record, lambda: files)
    assert len(caught) == 1
    assert built and entry.read(CUBIN_FILE) == b"ours" and entry.path is not None
    assert os.stat(entry.path.parent).st_uid == 0  # their shard was put aside
    assert Cache(root).get(key).read(CUBIN_FILE) == b"ours"


def test_a_link_the_other_user_owns_is_followed_once(shared: Path, tmp_path: Path, kernel_files):
    """``PHOBOS_CACHE_DIR`` names a link in a shared folder; its owner points it at your own
    cache, then at theirs: a cache opened before keeps to the folder it checked."""
    mine, theirs, link = tmp_path / "mine", shared / "theirs", shared / "link"
    key, record, files = kernel_files("k", b"ours")
    mine.mkdir(mode=0o700)
    as_other_user(lambda: link.symlink_to(mine))
    cache = Cache(link)
    assert not cache.in_memory and cache.put(key, record, files).path.is_relative_to(mine)

    def switch() -> None:
        _plant_entry(theirs, key, record, tampered_cubin(files))
        link.unlink()
        link.symlink_to(theirs)

    as_other_user(switch)
    assert cache.get(key).read(CUBIN_FILE) == b"ours"
    with pytest.warns(CacheWarning, match="owned by uid 65534"):
        assert Cache(link).get(key) is None


def _plant_entry(root: Path, key: str, record: dict, files: dict[str, bytes]) -> None:
    """Write an entry by hand, as a foreign writer following docs/cache.md would."""
    from phobos.cache.manifest import build_manifest, encode_manifest

    folder = root / "v1" / key[:2] / key
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    manifest = build_manifest(key, record, files, 1.0)
    (folder / "manifest.json").write_bytes(encode_manifest(manifest))


def tampered_cubin(files: dict[str, bytes]) -> dict[str, bytes]:
    return {**files, CUBIN_FILE: b"theirs"}


@pytest.fixture
def kernel_files():
    def make(name: str, cubin: bytes):
        record = {"kernel": name, "arch": "sm_90", "program": f"kernel {name}() {{}}"}
        return cache_key(record), record, {CUBIN_FILE: cubin, CONTRACT_FILE: b"{}"}

    return make


# -- a shared cache, pinned by its owner -----------------------------------------------------


def test_a_pinned_cache_of_a_trusted_owner_is_read_and_never_written(
    shared: Path, kernel_files, capsys
):
    root = shared / "fleet"
    pinned_key, pinned_record, pinned_files = kernel_files("pinned", b"fleet cubin")
    late_key, late_record, late_files = kernel_files("late", b"not pinned")

    def build_and_pin() -> None:
        cache = Cache(root)
        cache.put(pinned_key, pinned_record, pinned_files)
        assert cache.pin().keys == [pinned_key]
        cache.put(late_key, late_record, late_files)  # after the pin: not served to others

    as_other_user(build_and_pin)
    before = sorted(str(p) for p in root.rglob("*"))

    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        cache = Cache(root, trusted_owner="nobody")
        assert cache.shared and cache.in_memory and cache.refused is None
        assert cache.get(pinned_key).read(CUBIN_FILE) == b"fleet cubin"
        assert cache.keys() == [pinned_key] and cache.verify() == []
        assert cache.get(late_key) is None
        entry, built = cache.get_or_build(late_key, late_record, lambda: {CUBIN_FILE: b"mine"})
    assert built and entry.path is None and entry.read(CUBIN_FILE) == b"mine"
    assert sorted(str(p) for p in root.rglob("*")) == before  # nothing written there

    assert cache_cli(["--root", str(root), "--trusted-owner", str(OTHER), "verify"]) == 0
    assert cache_cli(["--root", str(root), "--trusted-owner", "nobody", "list"]) == 0
    assert "shared by uid 65534 (nobody), read-only" in capsys.readouterr().out

    with pytest.warns(CacheWarning, match="owned by uid 65534") as caught:
        untrusting = Cache(root)  # without naming the owner: refused, as any other's root
        assert untrusting.get(pinned_key) is None
    assert len(caught) == 1


def test_a_pinned_cache_changed_after_its_pin_is_not_served(shared: Path, kernel_files):
    root = shared / "fleet"
    key, record, files = kernel_files("k", b"fleet cubin")

    def build_pin_and_change() -> None:
        cache = Cache(root)
        folder = cache.put(key, record, files).path
        cache.pin()
        (folder / CUBIN_FILE).write_bytes(b"changed")  # and a manifest that agrees
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"] = [
            {**spec, "size": 7, "sha256": hashlib.sha256(b"changed").hexdigest()}
            if spec["name"] == CUBIN_FILE
            else spec
            for spec in manifest["files"]
        ]
        (folder / "manifest.json").write_text(json.dumps(manifest))

    as_other_user(build_pin_and_change)
    with pytest.warns(CacheWarning, match="not the one its owner pinned") as caught:
        cache = Cache(root, trusted_owner=OTHER)
        assert [p.key for p in cache.verify()] == [key]
        assert cache.get(key) is None
        assert cache.get(key) is None
        entry, built = cache.get_or_build(key, record, lambda: files)
    assert len(caught) == 1
    assert built and entry.read(CUBIN_FILE) == b"fleet cubin" and entry.path is None


@pytest.mark.parametrize(
    "spoil",
    ["pins writable by others", "no pins", "pins not JSON", "another owner named"],
)
def test_a_shared_cache_without_good_pins_is_refused(shared: Path, kernel_files, spoil: str):
    root = shared / "fleet"
    key, record, files = kernel_files("k", b"fleet cubin")

    def build() -> None:
        cache = Cache(root)
        cache.put(key, record, files)
        pins = cache.pin().path
        if spoil == "pins writable by others":
            os.chmod(pins, 0o666)
        elif spoil == "no pins":
            pins.unlink()
        elif spoil == "pins not JSON":
            pins.write_text("[" * 100_000)

    as_other_user(build)
    owner = 65533 if spoil == "another owner named" else OTHER
    with pytest.warns(CacheWarning, match="not using the cache folder") as caught:
        cache = Cache(root, trusted_owner=owner)
        assert cache.get(key) is None
    assert len(caught) == 1
    assert cache.refused is not None and not cache.shared
