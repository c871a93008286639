"""Analysis: pure functions on xarray objects, and the thin accessors that delegate to them."""

from . import fpt  # noqa: F401  (registers ``Dataset.fpt``)
