// Package native is sfsweep's CPU training engine: the forward and backward pass of the
// LLaMA-style model of the paper, and of its GPT-2 appendix model, in Go on flat buffers, with the linear layers handed to
// [gemm.Gemm] and the rest in row kernels (AVX-512 or AVX2 assembly for float32 on amd64,
// picked at start-up).
//
// The model is llm-baselines' Llama (and the PyTorch peer's, bench/torch/torch_llama.py):
// token embedding wte, L × [x += c_proj(Attn(c_attn(ln_1(x)))); x += mlp.c_proj(silu(w1·x) ⊙
// w2·x) with x = ln_2(x)], a final RMSNorm ln_f, the LM head (by default wte itself, so the
// gradient of wte is the sum of the gather's and the head's; lm_head.weight when the config
// is untied) and the mean next-token cross-entropy over all B·T positions. Attention is causal
// softmax attention with scale 1/√D (D = Dim/Heads) and RoPE (rotate_half form, θ =
// RopeTheta) on q and k; RMSNorm is x·rsqrt(mean(x²)+NormEps)·w; no layer has a bias.
//
// # GPT-2
//
// With cfg.Arch = model.GPT2 the model is llm-baselines' base model (nanoGPT's): x = wte[token] + wpe[position],
// L × [x += c_proj(Attn(c_attn(ln_1(x)))); x += mlp.c_proj(GELU(mlp.c_fc(ln_2(x))))], ln_f,
// logits = ln_f(x)·wteᵀ (tied as the LLaMA's, or untied) and the same cross-entropy. Attention is the
// same causal attention without RoPE; the linear layers and LayerNorms have biases where
// the config asks for them (Biases, nanoGPT's), none by default (llm-baselines'); LayerNorm
// is (x − mean)·rsqrt(var + NormEps)·w + b with the biased variance, as torch.nn.LayerNorm.
// GELU is the exact form 0.5·x·(1 + erf(x/√2)) (torch.nn.GELU's default), not GPT-2's tanh
// approximation: float64 uses math.Erf; the float32 AVX-512 kernel (kernels_gelu_amd64.s)
// takes erf from Abramowitz & Stegun 7.1.26, absolute error ≤ 1.5e-7. The other GPT-2 ops
// (ops_gpt2.go: position embedding, LayerNorm, bias add and bias gradient) are portable
// loops. The GPT-2 passes are in gpt2.go; they use the buffers below with c_attn as qkv,
// c_fc as w13 (one (F,C) matrix), gu (N,F) the c_fc output before the GELU and h after it,
// and per LayerNorm the row means besides rstd.
//
// # Use
//
//	m, err := native.New[float32](cfg, batch, seqLen)
//	model.Init(cfg, seed, m.Params())
//	for each step {
//		m.ZeroGrad()
//		loss, err := m.Forward(tokens, targets) // then Backward, once
//		m.Backward()                            // adds ∂loss/∂params to Grads
//		opt.Step(m.Grads())                     // updates Params in place
//	}
//
// # Buffers
//
// Parameters and gradients are two flat buffers in model.Config.Layout order; wq, wk, wv
// are adjacent there, so the three projections are one (3C, C) matrix and one GEMM, and so
// are the MLP's w1 (gate) and w3 (up) as one (2F, C) matrix. Everything a step needs is
// allocated by New; Forward and Backward allocate nothing. The forward pass keeps, per
// block l (N = B·T rows, all row-major):
//
//	resid[2l], resid[2l+1]  (N,C)     the residual stream entering the block and after attention
//	n1Rstd, n2Rstd          (N)       1/rms of each norm's input rows
//	n1Out, n2Out            (N,C)     the norms' outputs (inputs of the GEMMs)
//	qkv                     (N,3C)    q | k | v per row, q and k rotated
//	att                     (B,H,T,T) attention probabilities (upper triangle zero or unused)
//	y                       (N,C)     the heads' outputs, concatenated
//	gu                      (N,2F)    gate | up projections
//	h                       (N,F)     silu(gate)·up
//
// plus the final norm and the logits (N,V), which the cross-entropy turns into
// probabilities in place and Backward into their gradient. The residual adds are fused
// into the GEMMs (copy the stream, then β = 1). The backward pass reuses one set of scratch
// buffers for every block and carries the gradient of the residual stream in one (N,C)
// buffer that each branch adds to.
//
// # Attention
//
// Attention runs per (batch, head) pair on small matrices that are strided views of qkv,
// without gemm: the keys (forward) or values (backward) of the pair are transposed into
// scratch so that every product has a B operand with contiguous rows, and a broadcast-A
// kernel (vMatmul; 8 rows × 32 columns of accumulators in AVX-512) computes it without
// packing. Rows go in blocks of attBlock; a block's scores are computed only against the
// keys up to its last row, so most of the masked triangle is skipped. The probabilities are
// kept for the backward pass; the gradient of the scores is scratch.
//
// # Parallelism and determinism
//
// The row kernels run on par.Default(), as gemm does (one at a time; no kernel calls gemm):
// row ops split the N rows, attention the B·H pairs, the embedding gradient its C columns,
// the position-embedding gradient its T positions. Each output element is computed by one
// goroutine in a fixed order, and the sums over rows of the norm-weight and bias gradients
// are taken per fixed chunk of normChunk rows and added in chunk order, so results are
// bitwise independent of the number of workers (gemm promises the same).
//
// # One arithmetic on every machine
//
// In float32 every kernel family gives the same bits: the AVX-512 kernels, the AVX2 ones
// and the portable loops (SFSWEEP_KERNELS=go, -tags purego). Each kernel's operations and
// their order are specified once, by the SIMD kernels, and spec32.go writes them out in Go:
// fused multiply-adds where the kernels fuse (internal/fp32), every reduction in 16 lanes
// (element i in lane i mod 16) reduced by one tree, e^x and erf from one polynomial each.
// TestKernelSetsBitwise checks each primitive and TestTrainingBitwise a training run under
// every family the machine runs. Float64, the gradient-check precision, keeps its plain
// loops.
package native
