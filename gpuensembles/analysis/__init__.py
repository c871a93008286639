"""Analysis: pure functions on xarray objects, and the thin accessors that delegate to them."""

from . import fpt, ising, langevin  # noqa: F401  (register ``Dataset.fpt``, ``Dataset.ising`` and ``Dataset.langevin``)
