"""What runs on the GPU, tested without one: torch's array operations (on CPU tensors) and the
order of the device timer's driver calls (with a fake driver)."""

from __future__ import annotations

import pytest

from phobos.autotune import DeviceTimer, ops_for, tolerance_for


def test_torch_operations_snapshot_poison_restore_and_compare():
    torch = pytest.importorskip("torch")
    out = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ops = ops_for(out)
    assert ops.dtype == "f32"
    saved = ops.snapshot(out)
    ops.poison(out)
    assert torch.isnan(out).all()
    ops.restore(out, saved)
    assert torch.equal(out, saved)
    wrong = saved.clone()
    wrong[1, 2] += 10
    found = ops.compare(wrong, saved, tolerance_for("f32"))
    assert found.index == (1, 2) and found.bad == 1 and found.error == pytest.approx(10)
    ints = torch.zeros(3, dtype=torch.int32)
    ops_for(ints).poison(ints)
    assert (ints == int.from_bytes(b"\xa5" * 4, "little", signed=True)).all()
    halves = torch.zeros(4, 6, dtype=torch.bfloat16)[:, ::2]  # not contiguous
    ops = ops_for(halves)
    ops.poison(halves, 1)
    assert torch.isnan(halves).all() and ops.count(ops.holds_poison(halves, 1)) == 12
    halves[2, 1] = 3.0
    assert ops.first_index(~ops.holds_poison(halves, 1), tuple(halves.shape)) == (2, 1)
    flags = torch.ones(5, dtype=torch.bool)
    ops_for(flags).poison(flags)
    assert not flags.any() and ops_for(flags).count(ops_for(flags).holds_poison(flags)) == 5


class FakeDriver:
    """The calls of phobos-launch's ``CudaDriver`` that the device timer makes."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.next_event = 100

    def current_device(self) -> int:
        return 3

    def l2_cache_bytes(self, device: int) -> int:
        assert device == 3
        return 50 << 20

    def allocate(self, nbytes: int) -> int:
        self.calls.append(("alloc", nbytes))
        return 7

    def free(self, pointer: int) -> None:
        self.calls.append(("free", pointer))

    def create_event(self, timed: bool = False) -> int:
        assert timed
        self.next_event += 1
        return self.next_event

    def record_event(self, event: int, stream: int) -> None:
        self.calls.append(("record", event, stream))

    def memset_async(self, pointer: int, nbytes: int, stream: int) -> None:
        self.calls.append(("flush", pointer, nbytes, stream))

    def elapsed_ms(self, start: int, end: int) -> float:
        return float(end - start)

    def destroy_event(self, event: int) -> None:
        self.calls.append(("destroy", event))

    def synchronize_stream(self, stream: int) -> None:
        self.calls.append(("sync", stream))


def test_device_timer_flushes_l2_before_each_repeat_and_queues_them_all(monkeypatch):
    import phobos.autotune.timing as timing

    fake = FakeDriver()
    monkeypatch.setattr(timing, "shared_driver", lambda: fake)
    timer = DeviceTimer(stream=5)
    assert fake.calls == [("alloc", 100 << 20)]
    log = fake.calls
    times = timer.time(lambda: log.append(("run",)), lambda: log.append(("restore",)), 2)
    assert times == [1.0, 1.0]
    kinds = [c[0] for c in log[1:]]
    assert kinds[:10] == ["restore", "flush", "record", "run", "record"] * 2
    assert kinds[10] == "sync" and kinds.count("destroy") == 4
    assert all(c[-1] == 5 for c in log if c[0] in ("flush", "record"))
    timer.close()
    assert log[-1] == ("free", 7)
