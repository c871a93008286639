"""One module per physical system: its scalar step functions, kernels and run function."""
