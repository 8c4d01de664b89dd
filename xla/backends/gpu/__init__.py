"""The GPU backend: NVPTX code generation through llvmlite, run on NVIDIA GPUs
through the CUDA driver, or on the host through an emulator of the GPU
execution model (docs/gpu_backend.md)."""
