"""Case files, outputs (VTU, CSV) and checkpoints."""
