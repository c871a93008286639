"""A fix applied to numba-cuda's CUDA simulator wherever the tests run it.

The simulator runs each CUDA thread as a Python thread. ``cuda.shared.array`` looks up the
block's allocation for its line of source (``FakeCUDAShared.array``: ``dict.get``, then a new
array stored if there was none) without a lock, and the ``traceback.extract_stack`` it finds the
line with may hand the interpreter to another thread in between. Two threads of a block at the
same line can then each allocate, and keep, an array of their own: the block's threads no
longer share that memory for the launch. The simulated Ising kernels failed about one suite run
in six that way (a lattice or a measurement differing from the CPU's, in one case or another).
:func:`lock_shared_allocations` makes the lookup and the store one step;
``tests/test_simulator_fixes.py`` shows the race and the fix.
"""

import sys
import threading

import numpy as np


def locked_shared_array(unlocked):
    """``FakeCUDAShared.array`` with the lookup and store of a static allocation under one lock
    (keyed, as the simulator keys it, by the calling line; ``unlocked`` serves the rest)."""
    from numba.core import types
    from numba.np import numpy_support

    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory (one buffer), or the simulator's error
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        line = caller.f_code.co_filename, caller.f_lineno
        with lock:
            found = self._allocations.get(line)
            if found is None:
                found = self._allocations[line] = np.empty(shape, dtype)
        return found

    array.locked, array.unlocked = True, unlocked
    return array


def lock_shared_allocations():
    """Serialize the simulator's shared-array allocations (idempotent)."""
    from numba.cuda.simulator import kernelapi

    if not getattr(kernelapi.FakeCUDAShared.array, "locked", False):
        kernelapi.FakeCUDAShared.array = locked_shared_array(kernelapi.FakeCUDAShared.array)
