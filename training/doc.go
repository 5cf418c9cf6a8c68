// Package training runs one training run of the paper's setting end to end: token data,
// the loop with gradient accumulation, evaluation of the loss at x, y and their
// exponential weighted averages, checkpoints with bitwise resume, and the probes of the
// paper's figures (the decay probe, the LR-decay branch, checkpoint interpolation).
//
// The loop and the probes that train share one training step (step.go): the engine's
// micro-batches, the mean of their gradients and the optimizer's update, on the host or,
// on an engine that keeps the step on its device (backend.DeviceLoop), there, with a copy
// on the host (mirror.go). A run's record (record.go) is what it hands its Record: its
// config, curves, final model and result (result.go); package trial stores them.
//
// The models and their compute are in the subpackages: model (configs, layout), backend
// (the engine interface), native (the CPU engine), oracle (the gorgonia gradient oracle),
// data (token files, tokenizers, batching) and checkpoint (safetensors checkpoints).
package training
