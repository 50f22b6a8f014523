"""`npbert finetune`, `evaluate` and `predict` (npbert/finetuning, npbert/tasks, npbert/heads): fine-tuning
end to end, the feature-based approach, adding a head, the task readers and the metrics."""
