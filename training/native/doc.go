// Package native is sfsweep's CPU training engine: the forward and backward pass of the
// LLaMA-style model of the paper in Go on flat buffers, with the linear layers handed to
// [gemm.Gemm] and the rest in row kernels (AVX-512 assembly for float32 on amd64).
//
// The model is the one of the PyTorch peer (shared/bench/torch_llama.py): token embedding,
// L × [x += Attn(RMSNorm(x)); x += SwiGLU(RMSNorm(x))], a final RMSNorm, an untied LM head
// and the mean next-token cross-entropy over all B·T positions. Attention is causal softmax
// attention with scale 1/√D (D = Dim/Heads) and RoPE (rotate_half form, θ = RopeTheta) on
// q and k; RMSNorm is x·rsqrt(mean(x²)+NormEps)·w; the MLP is w2(silu(w1·x) ⊙ w3·x); no
// layer has a bias. GPT-2 is not implemented yet.
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
// row ops split the N rows, attention the B·H pairs, the embedding gradient its C columns. Each output element is computed by one goroutine in a fixed order, and the
// sums over rows of the norm-weight gradients are taken per fixed chunk of normChunk rows
// and added in chunk order, so results are bitwise independent of the number of workers
// (gemm promises the same). They are not bitwise equal between float32 on the AVX-512
// kernels and the portable loops (SFSWEEP_KERNELS=go or -tags purego), which differ in
// rounding.
package native
