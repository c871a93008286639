"""The fix of tests/simulator_fixes.py: numba-cuda's simulator allocates a block's shared array
once per line even when its threads reach the line together, as they do on a GPU."""

import threading

import numpy as np

from .simulator_fixes import locked_shared_array


class MeetingDict(dict):
    """An allocation table whose lookups, once made, wait (up to 0.5 s) for a second thread's:
    two lookups then overlap, as they may when the simulator hands the interpreter on between
    a lookup and the store after it."""

    def __init__(self):
        super().__init__()
        self.meeting = threading.Barrier(2, timeout=0.5)

    def get(self, key, default=None):
        found = super().get(key, default)
        try:
            self.meeting.wait()
        except threading.BrokenBarrierError:  # the other thread cannot look up now
            pass
        return found


def arrays_of_two_threads(array):
    """How many distinct arrays two threads of one block get from one line."""
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    shared, got = FakeCUDAShared(0), [None, None]
    shared._allocations = MeetingDict()

    def thread(t):
        got[t] = array(shared, 8, np.int32)  # both threads at this one line

    threads = [threading.Thread(target=thread, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len({id(a) for a in got})


def test_the_simulator_as_shipped_gives_two_threads_at_once_two_arrays():
    # if this fails, numba-cuda has fixed the race: tests/simulator_fixes.py can go
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    shipped = getattr(FakeCUDAShared.array, "unlocked", FakeCUDAShared.array)
    assert arrays_of_two_threads(shipped) == 2


def test_locked_allocation_gives_both_threads_the_same_array():
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    assert arrays_of_two_threads(locked_shared_array(FakeCUDAShared.array)) == 1
