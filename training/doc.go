// Package training will hold the language models (LLaMA- and GPT-2-style), the native
// compute engine and its gorgonia oracle, token data, the training loop with evaluation at
// x, y and their EWAs, checkpoints with resume, and the decay and interpolation probes.
//
// It is the next layer above [github.com/sfsweep/sfsweep/sfadamw] and is built in its own
// increments; nothing here is implemented yet.
package training
