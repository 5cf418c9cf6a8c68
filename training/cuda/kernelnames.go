package cuda

// kernelNames are the kernels of the engine's path without fast paths, which every PTX it
// loads must hold (device.go); each fast path's are in fastNames.
var kernelNames = []string{
	"scale_add", "encoder_forward", "encoder_backward", "rmsnorm_forward", "rmsnorm_backward_dx",
	"rmsnorm_backward_dw_part", "sum_rows_add", "rope", "permute", "permute_backward", "unpermute",
	"softmax_causal", "softmax_causal_backward", "swiglu_forward", "swiglu_backward",
	"crossentropy_forward", "crossentropy_backward", "sumsq_chunks", "sfadamw_step", "adamw_step",
	"position_forward", "position_backward", "layernorm_forward", "layernorm_backward_dx",
	"layernorm_backward_dwdb_part", "bias_forward", "colsum_part", "gelu_forward", "gelu_backward",
	"scale", "ewa_update", "sf_x", "ewa_update_x", "to_bf16",
}
