package oracle

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/training/model"
)

// refLoss is an independent plain-Go float64 forward pass of the LLaMA model (simple loops
// over one sequence at a time, no gorgonia, no shared code with the graph): the mean
// next-token cross-entropy over all batch·seqLen positions. It follows
// bench/torch/torch_llama.py line by line. For a GPT-2 config it runs refLossGPT2.
func refLoss(cfg model.Config, params []float64, tokens, targets []int32, batch, seqLen int) float64 {
	if cfg.Arch == model.GPT2 {
		return refLossGPT2(cfg, params, tokens, targets, batch, seqLen)
	}
	l := cfg.Layout()
	w := func(name string) []float64 { return model.View(l, params, name) }
	d, H, hd, F, V := cfg.Dim, cfg.Heads, cfg.HeadDim(), cfg.Hidden, cfg.Vocab

	// matvec returns W·x for a torch-style weight W (out, in).
	matvec := func(W, x []float64, out int) []float64 {
		in := len(x)
		y := make([]float64, out)
		for o := range out {
			var s float64
			for i := range in {
				s += W[o*in+i] * x[i]
			}
			y[o] = s
		}
		return y
	}
	rmsnorm := func(x, g []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+cfg.NormEps)
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = v * r * g[i]
		}
		return y
	}
	// rope rotates the pairs (i, i+hd/2) of every head of x by pos·θ^(−2i/hd).
	rope := func(x []float64, pos int) {
		for h := range H {
			o := h * hd
			for i := range hd / 2 {
				ang := float64(pos) / math.Pow(cfg.RopeTheta, float64(2*i)/float64(hd))
				c, s := math.Cos(ang), math.Sin(ang)
				a, b := x[o+i], x[o+i+hd/2]
				x[o+i] = a*c - b*s
				x[o+i+hd/2] = a*s + b*c
			}
		}
	}

	var total float64
	for b := range batch {
		x := make([][]float64, seqLen)
		for t := range seqLen {
			tok := int(tokens[b*seqLen+t])
			x[t] = append([]float64(nil), w("transformer.wte.weight")[tok*d:(tok+1)*d]...)
		}
		for layer := range cfg.Layers {
			p := func(s string) []float64 { return w("transformer.h." + strconv.Itoa(layer) + "." + s) }
			q, k, v := make([][]float64, seqLen), make([][]float64, seqLen), make([][]float64, seqLen)
			for t := range seqLen {
				h := rmsnorm(x[t], p("ln_1.weight"))
				qkv := matvec(p("attn.c_attn.weight"), h, 3*d)
				q[t], k[t], v[t] = qkv[:d], qkv[d:2*d], qkv[2*d:]
				rope(q[t], t)
				rope(k[t], t)
			}
			for t := range seqLen {
				y := make([]float64, d)
				for h := range H {
					o := h * hd
					scores := make([]float64, t+1)
					m := math.Inf(-1)
					for j := 0; j <= t; j++ {
						var s float64
						for i := range hd {
							s += q[t][o+i] * k[j][o+i]
						}
						scores[j] = s / math.Sqrt(float64(hd))
						m = math.Max(m, scores[j])
					}
					var z float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - m)
						z += scores[j]
					}
					for j := range scores {
						for i := range hd {
							y[o+i] += scores[j] / z * v[j][o+i]
						}
					}
				}
				att := matvec(p("attn.c_proj.weight"), y, d)
				for i := range d {
					x[t][i] += att[i]
				}
			}
			for t := range seqLen {
				h := rmsnorm(x[t], p("ln_2.weight"))
				gate := matvec(p("mlp.w1.weight"), h, F)
				up := matvec(p("mlp.w2.weight"), h, F)
				for i := range F {
					gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
				}
				mlp := matvec(p("mlp.c_proj.weight"), gate, d)
				for i := range d {
					x[t][i] += mlp[i]
				}
			}
		}
		for t := range seqLen {
			logits := matvec(w(cfg.Head()), rmsnorm(x[t], w("transformer.ln_f.weight")), V)
			total += refCrossEntropy(logits, targets[b*seqLen+t])
		}
	}
	return total / float64(batch*seqLen)
}

// refCrossEntropy is −log softmax(logits)[target], stabilised by the row's maximum.
func refCrossEntropy(logits []float64, target int32) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, v)
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(v - m)
	}
	return m + math.Log(z) - logits[target]
}

// refLossGPT2 is an independent plain-Go float64 forward pass of the GPT-2 model as nanoGPT
// writes it (its biases zero in a model without them) (one sequence at a time, one token at a time): x = wte[tok] + wpe[pos]; per
// block x += c_proj(attn(ln_1(x))), x += mlp.c_proj(gelu(c_fc(ln_2(x)))); ln_f; logits =
// wte·x (or lm_head·x, untied); the mean next-token cross-entropy over all batch·seqLen positions.
// LayerNorm uses the biased variance, GELU the exact erf form, attention the fused c_attn
// output split q|k|v along its rows.
func refLossGPT2(cfg model.Config, params []float64, tokens, targets []int32, batch, seqLen int) float64 {
	l := cfg.Layout()
	// w is a tensor; the bias of a model without biases is zeros of its weight's rows
	w := func(name string) []float64 {
		if _, ok := l.Tensor(name); !ok && strings.HasSuffix(name, ".bias") {
			wt, _ := l.Tensor(strings.TrimSuffix(name, ".bias") + ".weight")
			return make([]float64, wt.Shape[0])
		}
		return model.View(l, params, name)
	}
	d, H, hd, F, V := cfg.Dim, cfg.Heads, cfg.HeadDim(), cfg.Hidden, cfg.Vocab

	// affine returns W·x + b for a torch-style weight W (out, in) and bias b (out).
	affine := func(W, b, x []float64) []float64 {
		in, out := len(x), len(b)
		y := make([]float64, out)
		for o := range out {
			s := b[o]
			for i := range in {
				s += W[o*in+i] * x[i]
			}
			y[o] = s
		}
		return y
	}
	layernorm := func(x, g, b []float64) []float64 {
		n := float64(len(x))
		var mean float64
		for _, v := range x {
			mean += v
		}
		mean /= n
		var vr float64
		for _, v := range x {
			vr += (v - mean) * (v - mean)
		}
		vr /= n
		r := 1 / math.Sqrt(vr+cfg.NormEps)
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = (v-mean)*r*g[i] + b[i]
		}
		return y
	}
	wte, wpe := w("transformer.wte.weight"), w("transformer.wpe.weight")

	var total float64
	for b := range batch {
		x := make([][]float64, seqLen)
		for t := range seqLen {
			tok := int(tokens[b*seqLen+t])
			x[t] = make([]float64, d)
			for i := range d {
				x[t][i] = wte[tok*d+i] + wpe[t*d+i]
			}
		}
		for layer := range cfg.Layers {
			p := func(s string) []float64 { return w("transformer.h." + strconv.Itoa(layer) + "." + s) }
			qkv := make([][]float64, seqLen) // q = [0,d), k = [d,2d), v = [2d,3d)
			for t := range seqLen {
				qkv[t] = affine(p("attn.c_attn.weight"), p("attn.c_attn.bias"), layernorm(x[t], p("ln_1.weight"), p("ln_1.bias")))
			}
			ys := make([][]float64, seqLen)
			for t := range seqLen {
				y := make([]float64, d)
				for h := range H {
					o := h * hd
					scores := make([]float64, t+1)
					m := math.Inf(-1)
					for j := 0; j <= t; j++ {
						var s float64
						for i := range hd {
							s += qkv[t][o+i] * qkv[j][d+o+i]
						}
						scores[j] = s / math.Sqrt(float64(hd))
						m = math.Max(m, scores[j])
					}
					var z float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - m)
						z += scores[j]
					}
					for j := range scores {
						for i := range hd {
							y[o+i] += scores[j] / z * qkv[j][2*d+o+i]
						}
					}
				}
				ys[t] = y
			}
			for t := range seqLen {
				att := affine(p("attn.c_proj.weight"), p("attn.c_proj.bias"), ys[t])
				for i := range d {
					x[t][i] += att[i]
				}
			}
			for t := range seqLen {
				fc := affine(p("mlp.c_fc.weight"), p("mlp.c_fc.bias"), layernorm(x[t], p("ln_2.weight"), p("ln_2.bias")))
				if len(fc) != F {
					panic("refLossGPT2: c_fc output size")
				}
				for i, v := range fc {
					fc[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
				}
				mlp := affine(p("mlp.c_proj.weight"), p("mlp.c_proj.bias"), fc)
				for i := range d {
					x[t][i] += mlp[i]
				}
			}
		}
		for t := range seqLen {
			xf := layernorm(x[t], w("transformer.ln_f.weight"), w("transformer.ln_f.bias"))
			logits := affine(w(cfg.Head()), make([]float64, V), xf)
			total += refCrossEntropy(logits, targets[b*seqLen+t])
		}
	}
	return total / float64(batch*seqLen)
}

// testParams returns parameters of cfg drawn from seed with a larger spread than the
// training initialisation (σ = std for every matrix, norm scales 1 ± 0.3), so that
// attention is far from uniform and every gradient is well above rounding noise. Biases
// (GPT-2) are drawn uniform in ±0.3 rather than left at zero, so that each one is exercised.
func testParams(cfg model.Config, seed uint64, std float64) []float64 {
	c := cfg
	c.InitStd = std
	p := make([]float64, c.NumParams())
	model.Init(c, seed, p)
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, t := range c.Layout().Tensors {
		switch t.Kind {
		case "norm":
			for i := t.Offset; i < t.Offset+t.Size; i++ {
				p[i] = 1 + 0.3*(2*rng.Float64()-1)
			}
		case "bias":
			for i := t.Offset; i < t.Offset+t.Size; i++ {
				p[i] = 0.3 * (2*rng.Float64() - 1)
			}
		}
	}
	return p
}

// testTokens returns random tokens and targets for a (batch, seqLen) batch.
func testTokens(cfg model.Config, seed uint64, batch, seqLen int) (tokens, targets []int32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	tokens, targets = make([]int32, batch*seqLen), make([]int32, batch*seqLen)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(cfg.Vocab))
		targets[i] = int32(rng.IntN(cfg.Vocab))
	}
	return tokens, targets
}
