"""The builtin plugins of mlmh. Each module registers through the same hooks a third party uses."""

#: Loaded in this order, always, before any entry-point plugin.
BUILTIN_MODULES = [
    "mlmh.plugins.presets",
    "mlmh.plugins.models_hf",
    "mlmh.plugins.models_trained",
    "mlmh.plugins.maskings",
    "mlmh.plugins.samplers",
    "mlmh.plugins.datasets_pan",
    "mlmh.plugins.datasets_mpst",
    "mlmh.plugins.datasets_mimic",
    "mlmh.plugins.datasets_text",
    "mlmh.plugins.tasks_av",
    "mlmh.plugins.tasks_classification",
    "mlmh.plugins.tasks_ner",
    "mlmh.plugins.metrics_overlap",
    "mlmh.plugins.metrics_bertscore",
    "mlmh.plugins.metrics_diversity",
    "mlmh.plugins.metrics_ppl",
    "mlmh.plugins.trackers_wandb",
    "mlmh.plugins.trackers_mlflow",
    "mlmh.plugins.trackers_tensorboard",
]
