"""Domain model: pydantic types for models, hardware, scenarios and projects. No Qt here."""

from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.errors import CatalogError, InputError, ModelImportError, WorkbenchError
from workbench.core.hardware import Accelerator, Cluster, NodeShape, Source, Vendor
from workbench.core.model import (
    EncoderDecoderConfig,
    Head,
    MLAConfig,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    NormKind,
    PositionEmbedding,
    SlidingWindow,
    VisionConfig,
)
from workbench.core.project import Comparison, Project
from workbench.core.scenario import (
    AttentionKernel,
    FinetuneMethod,
    Offload,
    Optimizer,
    Parallelism,
    PipelineSchedule,
    Pricing,
    Recompute,
    Scenario,
    ServingOptions,
    Workload,
)

__all__ = [
    "Accelerator", "AttentionKernel", "CatalogError", "Cluster", "Comparison", "DType",
    "EncoderDecoderConfig", "FinetuneMethod", "Head", "InputError", "MLAConfig", "ModelArchitecture",
    "ModelImportError", "ModelKind", "MoEConfig", "NodeShape", "NormKind", "Offload", "Optimizer",
    "Parallelism", "PipelineSchedule", "PositionEmbedding", "Pricing", "Project", "Recompute",
    "Scenario", "ServingOptions", "SlidingWindow", "Source", "Vendor", "VisionConfig", "WeightFormat",
    "WorkbenchError", "Workload", "weight_bits",
]
