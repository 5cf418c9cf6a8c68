// Package cuda is the CUDA backend of the transformer engine: the LLaMA and GPT-2 models of
// training/native run on an NVIDIA GPU, registered as the backends of the catalog's "cuda" family
// (training/backend), one for each precision of its matrix products.
//
// Everything but this file and the bookkeeping of the timing mode (profile.go) is behind the
// cuda build tag, so the default build needs only Go;
// with the tag the package uses cgo, the CUDA driver API and cuBLAS through
// gorgonia.org/cu, and kernels of its own (kernels.cu) compiled to PTX and embedded in the
// binary. docs/gpu.md has the build recipe.
//
// The engine implements backend.Engine with parameters, gradients and activations in device
// memory, and backend.DeviceOptimizers: SF-AdamW and AdamW stepped on the device with the
// update rules of package sfadamw, element for element, and their state exchanged as an
// sfadamw.State, so a checkpoint moves between backends. The forward and backward passes
// follow training/native op by op: the same fused qkv and gate|up matrices in model.Layout
// order, RoPE in the rotate_half form, causal softmax attention with scale 1/√D and the mean
// cross-entropy over the batch·seqLen rows. Matrix products are cuBLAS SGEMMs in float32
// (TF32 tensor cores only at precision backend.TF32, bfloat16 operands at backend.BF16); attention runs as llm.c does
// it: batched SGEMMs around a causal softmax kernel, with the probabilities kept for the
// backward pass. GPT-2 follows training/native/gpt2.go the same way (LayerNorm, biases,
// exact GELU, learned positions). The LM head is the token embedding unless the model is
// untied, as in training/native. Every reduction has a fixed order, so a run
// is reproducible bit for bit.
//
// Engines in one process share GPU 0, its primary context and the loaded kernels, and run at
// once: each has a stream of its own, a cuBLAS handle bound to it with a workspace of its
// own, and a lock on its own work only, so a trial's results are the same bits alone or
// beside others.
//
// A timing mode (ProfileEnv) charges each device operation to a category (attention,
// head/CE, norms, elementwise, GEMMs, rounding to bfloat16, embedding, optimizer, transfers)
// and times runs of operations of one category with CUDA events: the measured form of the
// cost model in bench/gpu/RESULTS.md. Off, it records nothing and changes no bit.
//
// Faster paths that give the same bits, signed off on a GPU, are on by default (signedOff:
// a fused cross-entropy, kernels that write the bfloat16 operands they produce, RMSNorm's
// backward pass in one kernel, rmsnorm.cu, and producers that write only the bfloat16
// operand); FastEnv turns them off by name. The others, deterministic flash attention on
// bfloat16 tensor cores (flash.cu) among them, which change the bits within a stated
// tolerance, are an arithmetic a trial names by its backend (cuda-bf16-flash: flash and
// the one-pass cross-entropy; trialPaths), never by FastEnv; the rest run in this
// package's tests only. Their kernels are optional, so an older PTX still loads without
// them. The flash kernels' index maths is one C header
// (flashmath/flash_tiles.h) that Go tests check through cgo, their algorithm has a Go
// mirror, and their source runs on the CPU (flashemu) bitwise against the mirror.
//
// The host's side of a step (accumulate.go, pinned.go, graph.go): the engine is a
// backend.Accumulator, whose micro-batches keep their losses on the device until the step
// ends, so a step waits for the device once; tokens reach it through pinned buffers by
// asynchronous copies; and, behind FastEnv's "graph", a micro-batch's forward and backward
// passes are captured once as a CUDA graph and replayed (graphplan.go says when, without
// cgo).
//
// CUDA and cuBLAS failures are returned as errors that name the operation.
package cuda
