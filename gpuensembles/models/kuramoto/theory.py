"""Exact references of the Kuramoto model (N -> infinity, Lorentzian frequencies)."""

import numpy as np


def kuramoto_order_parameter(K, delta):
    """Stationary order parameter of the Kuramoto model with Lorentzian frequencies, N -> oo.

    ``r = sqrt(1 - 2 delta / K)`` above the threshold ``K_c = 2 delta`` and 0 below
    (Kuramoto 1975; Acebron et al., Rev. Mod. Phys. 77, 137 (2005), Eq. 12), for
    coupling ``(K/N) sum_j sin(x_j - x_i)``, half-width ``delta`` and no noise.
    """
    K, delta = np.asarray(K, dtype=float), np.asarray(delta, dtype=float)
    return np.sqrt(np.clip(1.0 - 2.0 * delta / K, 0.0, None))
