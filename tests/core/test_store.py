"""Stores that cannot be fooled: damaged chunks are recomputed (never used, never crash the
interpreter), a damaged plan record is refused by name, and two processes cannot write one
store at once while a killed owner leaves no stale lock.

Every rerun on a damaged store runs in a child process, so that a crash (segmentation
fault, bus error) fails the test instead of ending the test session.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

CASE = dict(damping=1.0, gamma=0.5, h=0.01, model="overdamped", backend="cpu", D=[0.3, 0.5], seed=7,
            realizations=400, progress=False)


def _child(store, out, extra=""):
    """Run CASE into ``store`` in a child process; save its steps to ``out``; return the process."""
    script = textwrap.dedent(f"""
        import warnings, numpy as np, gpuensembles as ge
        warnings.simplefilter("always")
        {extra}
        ds = ge.escape_times(**{CASE!r}, store={str(store)!r})
        np.save({str(out)!r}, ds.steps.values)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished store and the steps of the undamaged run."""
    store = tmp_path_factory.mktemp("store")
    out = store.parent / "reference.npy"
    proc = _child(store, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return store, np.load(out)


def _error(proc) -> str:
    """The ValueError line a refused child printed (its traceback's last exception line)."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith(("ValueError", "Traceback"))]
    assert lines and lines[-1].startswith("ValueError"), proc.stderr[-3000:]
    assert "ResourceWarning" not in proc.stderr, proc.stderr[-3000:]  # the refusal released the lock
    return lines[-1]


def _copy(store, tmp_path):
    target = tmp_path / "store"
    target.mkdir()
    for f in store.iterdir():
        if f.name != "lock":
            (target / f.name).write_bytes(f.read_bytes())
    return target


def _flip_middle(path):
    raw = bytearray(path.read_bytes())
    mid = len(raw) // 2
    raw[mid - 128:mid + 128] = bytes(b ^ 0xFF for b in raw[mid - 128:mid + 128])
    path.write_bytes(bytes(raw))


def _truncate(path):
    path.write_bytes(path.read_bytes()[:100])


def _zero(path):
    path.write_bytes(bytes(path.stat().st_size))


def _flip_one_value(path):
    # the data of the last realization: a valid .npy file whose numbers are wrong
    values = np.load(path)
    values.flat[-1] += 1
    np.save(path, values)


DAMAGE = {
    "256 bytes flipped in the middle": _flip_middle,
    "truncated to 100 bytes": _truncate,
    "zeroed": _zero,
    "deleted": lambda path: path.unlink(),
    "one value changed, file still valid": _flip_one_value,
    "record deleted": lambda path: path.with_suffix(".json").unlink(),
    "record truncated": lambda path: path.with_suffix(".json").write_text('{"sha2'),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_chunk_is_recomputed_bit_identically(finished, tmp_path, damage):
    store, reference = finished
    damaged = _copy(store, tmp_path)
    chunk = sorted(damaged.glob("chunk-*.npy"))[3]
    assert chunk.stat().st_size > 512  # large enough for the 256 flipped bytes to land inside the data
    DAMAGE[damage](chunk)
    out = tmp_path / "out.npy"
    proc = _child(damaged, out)
    assert proc.returncode == 0, proc.stderr[-3000:]  # a crash of the child fails here
    np.testing.assert_array_equal(np.load(out), reference)  # a damaged chunk used would differ
    if damage != "deleted":
        assert f"store chunk {chunk} is unusable" in proc.stderr, proc.stderr[-2000:]
        assert proc.stderr.count("is unusable") == 1  # one line, naming the one file
    # the chunk was written again: a second rerun reuses everything, silently
    again = _child(damaged, out)
    assert again.returncode == 0 and "unusable" not in again.stderr
    np.testing.assert_array_equal(np.load(out), reference)


def test_every_chunk_damaged_still_gives_the_reference(finished, tmp_path):
    store, reference = finished
    damaged = _copy(store, tmp_path)
    for chunk in damaged.glob("chunk-*.npy"):
        _flip_middle(chunk)
    out = tmp_path / "out.npy"
    proc = _child(damaged, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(out), reference)


@pytest.mark.parametrize("damage", ["truncated", "not JSON", "emptied"])
def test_damaged_plan_record_is_refused_by_name(finished, tmp_path, damage):
    store, _ = finished
    damaged = _copy(store, tmp_path)
    meta = damaged / "plan.json"
    text = meta.read_text()
    meta.write_text({"truncated": text[:40], "not JSON": "\x00" * 64, "emptied": ""}[damage])
    proc = _child(damaged, tmp_path / "out.npy")
    assert proc.returncode != 0
    last = _error(proc)
    assert str(meta) in last and "delete" in last, last


def test_a_second_process_is_refused_and_a_killed_owner_leaves_no_lock(tmp_path):
    store = tmp_path / "store"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, gpuensembles as ge
        ds = ge.escape_times(**{CASE!r}, store={str(store)!r}, chunks=25)  # lazy, eager chunking: holds the lock
        print("holding", flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        proc = _child(store, tmp_path / "out.npy")
        assert proc.returncode != 0
        last = _error(proc)
        assert "is in use by process" in last and str(holder.pid) in last, last
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    time.sleep(0.1)
    proc = _child(store, tmp_path / "out.npy")  # the kernel released the dead owner's lock
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_chunk_of_another_run_is_not_used(finished, tmp_path):
    store, reference = finished
    damaged = _copy(store, tmp_path)
    record = sorted(damaged.glob("chunk-*.json"))[2]
    content = json.loads(record.read_text())
    content["fingerprint"] = "0" * 64
    record.write_text(json.dumps(content))
    out = tmp_path / "out.npy"
    proc = _child(damaged, out)
    assert proc.returncode == 0 and "belongs to another run" in proc.stderr, proc.stderr[-2000:]
    np.testing.assert_array_equal(np.load(out), reference)
