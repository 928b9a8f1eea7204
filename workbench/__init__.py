"""GPU Planning Workbench: size AI workloads on GPUs before buying or renting them."""

__version__ = "0.1.0"
