"""Tests of gpuensembles.models.langevin."""
