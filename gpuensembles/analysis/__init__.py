"""Analysis: pure functions on xarray objects, and the thin accessors that delegate to them."""

from . import fpt, langevin  # noqa: F401  (register ``Dataset.fpt`` and ``Dataset.langevin``)
