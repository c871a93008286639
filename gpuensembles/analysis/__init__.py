"""Analysis: pure functions on xarray objects, and the thin accessors that delegate to them."""

from . import fpt, ising, langevin, tts  # noqa: F401  (register the Dataset accessors fpt, ising, langevin and tts)
