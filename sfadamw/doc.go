// Package sfadamw implements the optimizers of "Through the River: Understanding the Benefit
// of Schedule-Free Methods for Language Model Training" on flat parameter buffers:
//
//   - SF-AdamW exactly as Algorithm 1 of the paper, and refined SF-AdamW (Algorithm 2) with
//     the decoupling parameter C ([New], [Config]);
//   - the generic Schedule-Free recursion with a caller-supplied direction ([NewSF]), and
//     SF-SGD / SF-GD / SF-PrecondGDW on top of it ([NewSGD]);
//   - AdamW with constant, cosine, linear-decay and warmup-stable-decay schedules and
//     gradient clipping ([NewAdamW], [Schedule]);
//   - exponential weight averages of any iterate ([EWA]);
//   - full state export and import for checkpoints ([State]).
//
// Buffers are float32 for training and float64 for analysis ([Float]). Every optimizer
// updates the caller's parameter slice in place and allocates nothing per step.
//
// # Memory layout of SF-AdamW
//
// SF-AdamW keeps the memory of AdamW: the parameters hold y (where gradients are taken) and
// the state is z and the second moment v. Substituting x_t = (y_t − (1−β1)z_t)/β1 into
// Algorithm 1 gives the update actually executed,
//
//	z_{t+1} = z_t − γ_t Δ_t,   Δ_t = g_t/(√v̂_t + ε) + λ y_t
//	y_{t+1} = (1−c_{t+1}) y_t + c_{t+1} z_t + γ_t (β1(1−c_{t+1}) − 1) Δ_t
//
// which reads and writes the same number of vectors as AdamW. x is recovered on demand by
// [SFAdamW.X]. Where β1 = 0, y = z and x cannot be recovered, so x is stored instead of z;
// [Config.KeepX] stores x explicitly for any β1 (exact evaluation at x, one more vector).
package sfadamw
