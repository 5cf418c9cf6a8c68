// Package training runs one training run of the paper's setting end to end: token data,
// the loop with gradient accumulation, evaluation of the loss at x, y and their
// exponential weighted averages, checkpoints with bitwise resume, and the probes of the
// paper's figures (the decay probe, the LR-decay branch, checkpoint interpolation).
//
// The models and their compute are in the subpackages: model (configs, layout), backend
// (the engine interface), native (the CPU engine), oracle (the gorgonia gradient oracle),
// data (token files, tokenizers, batching) and checkpoint (safetensors checkpoints).
package training
