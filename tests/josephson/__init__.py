"""Tests of gpuensembles.models.josephson."""
