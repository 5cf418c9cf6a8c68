//go:build amd64 && !purego

#include "textflag.h"

// AVX-512F float32 row kernels (see kernels_amd64.go). 16 lanes per ZMM register; the tail
// of a row is handled with a lane mask in K1, so rows of any length n ≥ 0 (n ≥ 1 where
// stated) need no scalar loop. Masked loads do not fault on the lanes left out.
//
// Plan 9 operand order: the destination is last. VFMADD231PS b, a, d is d = a·b + d;
// VFNMADD231PS b, a, d is d = d − a·b; VFMADD213PS c, a, d is d = a·d + c;
// VSUBPS b, a, d is d = a − b; VDIVPS b, a, d is d = a / b; VSCALEFPS n, a, d is d = a·2^n.

// TAILMASK sets K1 to the lowest CX lanes (1 ≤ CX ≤ 15); clobbers R8.
#define TAILMASK \
	MOVL  $1, R8 \
	; SHLL CX, R8 \
	; DECL R8 \
	; KMOVW R8, K1

// EXPCONST loads the constants of EXP into Z16–Z25: log2(e), ln2 in a high and a low part,
// the coefficients p0…p5 of P, and 1; and the clamp bounds of EXP into Z28 = −110 and
// Z29 = 89. Clobbers AX.
#define EXPCONST \
	MOVL $0xc2dc0000, AX; VPBROADCASTD AX, Z28 \
	; MOVL $0x42b20000, AX; VPBROADCASTD AX, Z29 \
	; MOVL $0x3fb8aa3b, AX; VPBROADCASTD AX, Z16 \
	; MOVL $0x3f318000, AX; VPBROADCASTD AX, Z17 \
	; MOVL $0xb95e8083, AX; VPBROADCASTD AX, Z18 \
	; MOVL $0x39506967, AX; VPBROADCASTD AX, Z19 \
	; MOVL $0x3ab743ce, AX; VPBROADCASTD AX, Z20 \
	; MOVL $0x3c088908, AX; VPBROADCASTD AX, Z21 \
	; MOVL $0x3d2aa9c1, AX; VPBROADCASTD AX, Z22 \
	; MOVL $0x3e2aaaaa, AX; VPBROADCASTD AX, Z23 \
	; MOVL $0x3f000000, AX; VPBROADCASTD AX, Z24 \
	; MOVL $0x3f800000, AX; VPBROADCASTD AX, Z25

// EXP replaces A by e^A, as Cephes expf: A = n·ln2 + r with n = round(A·log2 e) and
// |r| ≤ ln2/2 (ln2 in two parts), e^r = 1 + r + r²·P(r) with P of degree 5, and e^A = e^r·2^n
// by VSCALEFPS, which rounds once, to a subnormal, 0 or +Inf where it must. A is first
// clamped to [−110, 89], as the AVX2 EXP and exp32 clamp it (NaN stays NaN): without the
// clamp, r is not small for |A| past about 2^24, and e^±Inf is NaN (∞ − ∞), where the other
// families give 0 and +Inf. Relative error about 2 ulp. B and C are scratch.
#define EXP(A, B, C) \
	VMAXPS A, Z28, A \
	; VMINPS A, Z29, A \
	; VMULPS Z16, A, B \
	; VRNDSCALEPS $0, B, B \
	; VFNMADD231PS Z17, B, A \
	; VFNMADD231PS Z18, B, A \
	; VMOVAPS Z19, C \
	; VFMADD213PS Z20, A, C \
	; VFMADD213PS Z21, A, C \
	; VFMADD213PS Z22, A, C \
	; VFMADD213PS Z23, A, C \
	; VFMADD213PS Z24, A, C \
	; VFMADD213PS Z25, A, C \
	; VFMADD213PS Z25, A, C \
	; VSCALEFPS B, C, A

// HSUM leaves the sum of the lanes of Z0 in X0 (lane 0); clobbers Z1.
#define HSUM \
	VEXTRACTF64X4 $1, Z0, Y1 \
	; VADDPS Y1, Y0, Y0 \
	; VEXTRACTF128 $1, Y0, X1 \
	; VADDPS X1, X0, X0 \
	; VPERMILPS $0x4e, X0, X1 \
	; VADDPS X1, X0, X0 \
	; VPERMILPS $0xb1, X0, X1 \
	; VADDPS X1, X0, X0

// HMAX leaves the maximum of the lanes of Z0 in X0 (lane 0); clobbers Z1.
#define HMAX \
	VEXTRACTF64X4 $1, Z0, Y1 \
	; VMAXPS Y1, Y0, Y0 \
	; VEXTRACTF128 $1, Y0, X1 \
	; VMAXPS X1, X0, X0 \
	; VPERMILPS $0x4e, X0, X1 \
	; VMAXPS X1, X0, X0 \
	; VPERMILPS $0xb1, X0, X1 \
	; VMAXPS X1, X0, X0

// func softmax32(x *float32, n int) (mx, sum float32)
// n ≥ 1. x[i] = e^(x[i]−mx)/sum in place, mx = max x, sum = Σ e^(x[i]−mx).
TEXT ·softmax32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), R9
	MOVQ R9, BX
	ANDQ $~15, BX // elements in whole vectors

	// pass 1: the maximum
	VBROADCASTSS (SI), Z0
	XORQ AX, AX
	CMPQ AX, BX
	JAE  maxtail
maxloop:
	VMAXPS (SI)(AX*4), Z0, Z0
	ADDQ   $16, AX
	CMPQ   AX, BX
	JB     maxloop
maxtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   maxdone
	TAILMASK
	VMOVAPS Z0, Z2
	VMOVUPS (SI)(BX*4), K1, Z2
	VMAXPS  Z2, Z0, Z0
maxdone:
	HMAX
	MOVSS        X0, mx+16(FP)
	VBROADCASTSS X0, Z26

	// pass 2: e^(x−mx) and its sum
	EXPCONST
	VXORPS Z27, Z27, Z27
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    exptail
exploop:
	VMOVUPS (SI)(AX*4), Z2
	VSUBPS  Z26, Z2, Z2
	EXP(Z2, Z3, Z4)
	VMOVUPS Z2, (SI)(AX*4)
	VADDPS  Z2, Z27, Z27
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      exploop
exptail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   expdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VSUBPS    Z26, Z2, Z2
	EXP(Z2, Z3, Z4)
	VMOVUPS   Z2, K1, (SI)(BX*4)
	VADDPS    Z2, Z27, K1, Z27
expdone:
	VMOVAPS Z27, Z0
	HSUM
	MOVSS X0, sum+20(FP)

	// pass 3: scale by 1/sum
	VBROADCASTSS X0, Z1
	VDIVPS       Z1, Z25, Z26 // 1/sum
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          scaletail
scaleloop:
	VMULPS  (SI)(AX*4), Z26, Z2
	VMOVUPS Z2, (SI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      scaleloop
scaletail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   scaledone
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VMULPS    Z26, Z2, Z2
	VMOVUPS   Z2, K1, (SI)(BX*4)
scaledone:
	VZEROUPPER
	RET

// func softmaxBackward32(dp, p *float32, n int, scale float32)
// dp[i] = scale·p[i]·(dp[i] − Σ p·dp).
TEXT ·softmaxBackward32(SB), NOSPLIT, $0-28
	MOVQ dp+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), R9
	VBROADCASTSS scale+24(FP), Z26
	MOVQ R9, BX
	ANDQ $~15, BX

	VXORPS Z0, Z0, Z0
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    dottail
dotloop:
	VMOVUPS     (SI)(AX*4), Z2
	VFMADD231PS (DI)(AX*4), Z2, Z0
	ADDQ        $16, AX
	CMPQ        AX, BX
	JB          dotloop
dottail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   dotdone
	TAILMASK
	VMOVUPS.Z   (SI)(BX*4), K1, Z2
	VMOVUPS.Z   (DI)(BX*4), K1, Z3
	VFMADD231PS Z3, Z2, Z0
dotdone:
	HSUM
	VBROADCASTSS X0, Z27

	XORQ AX, AX
	CMPQ AX, BX
	JAE  gradtail
gradloop:
	VMOVUPS (DI)(AX*4), Z2
	VSUBPS  Z27, Z2, Z2
	VMULPS  (SI)(AX*4), Z2, Z2
	VMULPS  Z26, Z2, Z2
	VMOVUPS Z2, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      gradloop
gradtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   graddone
	VMOVUPS.Z (DI)(BX*4), K1, Z2
	VMOVUPS.Z (SI)(BX*4), K1, Z3
	VSUBPS    Z27, Z2, Z2
	VMULPS    Z3, Z2, Z2
	VMULPS    Z26, Z2, Z2
	VMOVUPS   Z2, K1, (DI)(BX*4)
graddone:
	VZEROUPPER
	RET

// SWIGLU computes Z2 = silu(g)·u = g/(1+e^−g)·u from g in Z2 and u in Z5; Z3, Z4 scratch.
#define SWIGLU \
	VXORPS Z3, Z3, Z3 \
	; VSUBPS Z2, Z3, Z6 \
	; EXP(Z6, Z3, Z4) \
	; VADDPS Z25, Z6, Z6 \
	; VDIVPS Z6, Z2, Z2 \
	; VMULPS Z5, Z2, Z2

// func swigluForward32(out, gate, u *float32, n int)
TEXT ·swigluForward32(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), R9
	EXPCONST
	MOVQ R9, BX
	ANDQ $~15, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  swftail
swfloop:
	VMOVUPS (SI)(AX*4), Z2
	VMOVUPS (DX)(AX*4), Z5
	SWIGLU
	VMOVUPS Z2, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      swfloop
swftail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   swfdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VMOVUPS.Z (DX)(BX*4), K1, Z5
	SWIGLU
	VMOVUPS   Z2, K1, (DI)(BX*4)
swfdone:
	VZEROUPPER
	RET

// SWIGLUBWD computes, from g (Z2), u (Z5) and dout (Z7): du = dout·g·s (Z8) and
// dg = dout·u·s·(1 + g·(1−s)) (Z6), where s = 1/(1+e^−g). Z3, Z4 scratch.
#define SWIGLUBWD \
	VXORPS Z3, Z3, Z3 \
	; VSUBPS Z2, Z3, Z6 \
	; EXP(Z6, Z3, Z4) \
	; VADDPS Z25, Z6, Z6 \
	; VDIVPS Z6, Z25, Z6 \
	; VMULPS Z2, Z6, Z8 \
	; VMULPS Z7, Z8, Z8 \
	; VSUBPS Z6, Z25, Z3 \
	; VFMADD213PS Z25, Z2, Z3 \
	; VMULPS Z6, Z3, Z3 \
	; VMULPS Z5, Z3, Z3 \
	; VMULPS Z7, Z3, Z6

// func swigluBackward32(dg, du, dout, gate, u *float32, n int)
TEXT ·swigluBackward32(SB), NOSPLIT, $0-48
	MOVQ dg+0(FP), DI
	MOVQ du+8(FP), R10
	MOVQ dout+16(FP), R11
	MOVQ gate+24(FP), SI
	MOVQ u+32(FP), DX
	MOVQ n+40(FP), R9
	EXPCONST
	MOVQ R9, BX
	ANDQ $~15, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  swbtail
swbloop:
	VMOVUPS (SI)(AX*4), Z2
	VMOVUPS (DX)(AX*4), Z5
	VMOVUPS (R11)(AX*4), Z7
	SWIGLUBWD
	VMOVUPS Z6, (DI)(AX*4)
	VMOVUPS Z8, (R10)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      swbloop
swbtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   swbdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VMOVUPS.Z (DX)(BX*4), K1, Z5
	VMOVUPS.Z (R11)(BX*4), K1, Z7
	SWIGLUBWD
	VMOVUPS   Z6, K1, (DI)(BX*4)
	VMOVUPS   Z8, K1, (R10)(BX*4)
swbdone:
	VZEROUPPER
	RET

// func sumSquares32(x *float32, n int) float32
TEXT ·sumSquares32(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), R9
	MOVQ   R9, BX
	ANDQ   $~15, BX
	VXORPS Z0, Z0, Z0
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    sstail
ssloop:
	VMOVUPS     (SI)(AX*4), Z2
	VFMADD231PS Z2, Z2, Z0
	ADDQ        $16, AX
	CMPQ        AX, BX
	JB          ssloop
sstail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   ssdone
	TAILMASK
	VMOVUPS.Z   (SI)(BX*4), K1, Z2
	VFMADD231PS Z2, Z2, Z0
ssdone:
	HSUM
	MOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleMul32(out, x, w *float32, n int, s float32)
// out = x·s·w.
TEXT ·scaleMul32(SB), NOSPLIT, $0-36
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), R9
	VBROADCASTSS s+32(FP), Z26
	MOVQ         R9, BX
	ANDQ         $~15, BX
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          smtail
smloop:
	VMULPS  (SI)(AX*4), Z26, Z2
	VMULPS  (DX)(AX*4), Z2, Z2
	VMOVUPS Z2, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      smloop
smtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   smdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VMOVUPS.Z (DX)(BX*4), K1, Z3
	VMULPS    Z26, Z2, Z2
	VMULPS    Z3, Z2, Z2
	VMOVUPS   Z2, K1, (DI)(BX*4)
smdone:
	VZEROUPPER
	RET

// func rmsnormBackward32(dx, dwPart, dout, x, w *float32, n int, rs, invC float32)
// x̂ = x·rs; dwPart += dout·x̂; dot = Σ dout·w·x̂ · invC; dx += rs·(dout·w − x̂·dot).
TEXT ·rmsnormBackward32(SB), NOSPLIT, $0-56
	MOVQ         dx+0(FP), DI
	MOVQ         dwPart+8(FP), R10
	MOVQ         dout+16(FP), R11
	MOVQ         x+24(FP), SI
	MOVQ         w+32(FP), DX
	MOVQ         n+40(FP), R9
	VBROADCASTSS rs+48(FP), Z26
	MOVQ         R9, BX
	ANDQ         $~15, BX
	MOVQ         R9, CX
	SUBQ         BX, CX
	JZ           rbnomask
	TAILMASK
rbnomask:
	VXORPS Z0, Z0, Z0
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    rb1tail
rb1loop:
	VMULPS      (SI)(AX*4), Z26, Z2   // x̂
	VMOVUPS     (R11)(AX*4), Z3       // dout
	VMOVUPS     (R10)(AX*4), Z4
	VFMADD231PS Z3, Z2, Z4
	VMOVUPS     Z4, (R10)(AX*4)
	VMULPS      (DX)(AX*4), Z3, Z3    // dout·w
	VFMADD231PS Z3, Z2, Z0
	ADDQ        $16, AX
	CMPQ        AX, BX
	JB          rb1loop
rb1tail:
	CMPQ R9, BX
	JE   rb1done
	VMOVUPS.Z   (SI)(BX*4), K1, Z2
	VMULPS      Z26, Z2, Z2
	VMOVUPS.Z   (R11)(BX*4), K1, Z3
	VMOVUPS.Z   (R10)(BX*4), K1, Z4
	VFMADD231PS Z3, Z2, Z4
	VMOVUPS     Z4, K1, (R10)(BX*4)
	VMOVUPS.Z   (DX)(BX*4), K1, Z5
	VMULPS      Z5, Z3, Z3
	VFMADD231PS Z3, Z2, Z0
rb1done:
	HSUM
	VMULSS       invC+52(FP), X0, X0
	VBROADCASTSS X0, Z27

	XORQ AX, AX
	CMPQ AX, BX
	JAE  rb2tail
rb2loop:
	VMULPS       (SI)(AX*4), Z26, Z2   // x̂
	VMOVUPS      (R11)(AX*4), Z3
	VMULPS       (DX)(AX*4), Z3, Z3    // dout·w
	VFNMADD231PS Z27, Z2, Z3           // dout·w − x̂·dot
	VMOVUPS      (DI)(AX*4), Z4
	VFMADD231PS  Z26, Z3, Z4
	VMOVUPS      Z4, (DI)(AX*4)
	ADDQ         $16, AX
	CMPQ         AX, BX
	JB           rb2loop
rb2tail:
	CMPQ R9, BX
	JE   rb2done
	VMOVUPS.Z    (SI)(BX*4), K1, Z2
	VMULPS       Z26, Z2, Z2
	VMOVUPS.Z    (R11)(BX*4), K1, Z3
	VMOVUPS.Z    (DX)(BX*4), K1, Z5
	VMULPS       Z5, Z3, Z3
	VFNMADD231PS Z27, Z2, Z3
	VMOVUPS.Z    (DI)(BX*4), K1, Z4
	VFMADD231PS  Z26, Z3, Z4
	VMOVUPS      Z4, K1, (DI)(BX*4)
rb2done:
	VZEROUPPER
	RET

// ROTATE rotates the pairs (Z2, Z3) by (cos, sin) = (Z4, Z5) into (Z6, Z7).
#define ROTATE \
	VMULPS Z4, Z2, Z6 \
	; VFNMADD231PS Z5, Z3, Z6 \
	; VMULPS Z5, Z2, Z7 \
	; VFMADD231PS Z4, Z3, Z7

// func rope32(x, cos, sin *float32, heads, d int)
// For each of the heads consecutive vectors of d elements (d even), with h = d/2:
// (x[i], x[i+h]) = (x[i]·cos[i] − x[i+h]·sin[i], x[i]·sin[i] + x[i+h]·cos[i]) for i < h.
TEXT ·rope32(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ cos+8(FP), R10
	MOVQ sin+16(FP), R11
	MOVQ heads+24(FP), R12
	MOVQ d+32(FP), R13
	MOVQ R13, R9
	SHRQ $1, R9  // h
	MOVQ R9, BX
	ANDQ $~15, BX
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   ropeheads
	TAILMASK
ropeheads:
	TESTQ R12, R12
	JZ    ropedone
	LEAQ  (DI)(R9*4), SI // second half of the head
	XORQ  AX, AX
	CMPQ  AX, BX
	JAE   ropetail
ropeloop:
	VMOVUPS (DI)(AX*4), Z2
	VMOVUPS (SI)(AX*4), Z3
	VMOVUPS (R10)(AX*4), Z4
	VMOVUPS (R11)(AX*4), Z5
	ROTATE
	VMOVUPS Z6, (DI)(AX*4)
	VMOVUPS Z7, (SI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      ropeloop
ropetail:
	CMPQ BX, R9
	JE   ropenext
	VMOVUPS.Z (DI)(BX*4), K1, Z2
	VMOVUPS.Z (SI)(BX*4), K1, Z3
	VMOVUPS.Z (R10)(BX*4), K1, Z4
	VMOVUPS.Z (R11)(BX*4), K1, Z5
	ROTATE
	VMOVUPS   Z6, K1, (DI)(BX*4)
	VMOVUPS   Z7, K1, (SI)(BX*4)
ropenext:
	LEAQ (DI)(R13*4), DI
	DECQ R12
	JMP  ropeheads
ropedone:
	VZEROUPPER
	RET

// func scale32(x *float32, n int, s float32)
TEXT ·scale32(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), R9
	VBROADCASTSS s+16(FP), Z26
	MOVQ         R9, BX
	ANDQ         $~15, BX
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          sctail
scloop:
	VMULPS  (SI)(AX*4), Z26, Z2
	VMOVUPS Z2, (SI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      scloop
sctail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   scdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	VMULPS    Z26, Z2, Z2
	VMOVUPS   Z2, K1, (SI)(BX*4)
scdone:
	VZEROUPPER
	RET

// STORE2 scales the two accumulators of a row by alpha (Z31), stores them under the masks
// K1 and K2 at BX, and moves BX to the next row of C (R8 bytes on).
#define STORE2(A, B) \
	VMULPS Z31, A, A \
	; VMULPS Z31, B, B \
	; VMOVUPS A, K1, (BX) \
	; VMOVUPS B, K2, 64(BX) \
	; ADDQ R8, BX

// STORE1 is STORE2 for one accumulator (K1).
#define STORE1(A) \
	VMULPS Z31, A, A \
	; VMOVUPS A, K1, (BX) \
	; ADDQ R8, BX

// func matmul32(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32)
// C = alpha·A·B for C m×n (row stride ldc), A m×k with element (i, p) at a[i·rsA + p·csA]
// (so A or Aᵀ of a row-major matrix), B k×n row-major (row stride ldb). Each element of C
// is one chain of fused multiply-adds in increasing p. Rows go in groups of 8 (16
// accumulators), then 4, then one at a time; columns in chunks of 32, masked at the end.
TEXT ·matmul32(SB), NOSPLIT, $0-84
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ a+16(FP), SI
	MOVQ rsA+24(FP), R9
	SHLQ $2, R9
	MOVQ csA+32(FP), R10
	SHLQ $2, R10
	MOVQ b+40(FP), DX
	MOVQ ldb+48(FP), R11
	SHLQ $2, R11
	LEAQ (R9)(R9*2), R12 // 3 rows of A
	VBROADCASTSS alpha+80(FP), Z31

mmrows8:
	CMPQ m+56(FP), $8
	JLT  mmrows4
	XORQ R13, R13 // column
mmchunk8:
	CMPQ R13, n+64(FP)
	JGE  mmnext8
	MOVQ n+64(FP), CX
	SUBQ R13, CX
	CMPQ CX, $16
	JLE  mmone8 // at most one vector of columns left
	CALL mmmasks<>(SB)
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	VXORPS Z20, Z20, Z20
	VXORPS Z21, Z21, Z21
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	LEAQ   (SI)(R9*4), DX // rows 4–7 of A
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmstore8
mmloop8:
	VMOVUPS.Z    (BX), K1, Z8
	VMOVUPS.Z    64(BX), K2, Z9
	VBROADCASTSS (AX), Z10
	VBROADCASTSS (AX)(R9*1), Z11
	VBROADCASTSS (AX)(R9*2), Z12
	VBROADCASTSS (AX)(R12*1), Z13
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	VBROADCASTSS (DX), Z10
	VBROADCASTSS (DX)(R9*1), Z11
	VBROADCASTSS (DX)(R9*2), Z12
	VBROADCASTSS (DX)(R12*1), Z13
	VFMADD231PS  Z8, Z10, Z14
	VFMADD231PS  Z9, Z10, Z15
	VFMADD231PS  Z8, Z11, Z16
	VFMADD231PS  Z9, Z11, Z17
	VFMADD231PS  Z8, Z12, Z18
	VFMADD231PS  Z9, Z12, Z19
	VFMADD231PS  Z8, Z13, Z20
	VFMADD231PS  Z9, Z13, Z21
	ADDQ         R10, AX
	ADDQ         R10, DX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmloop8
mmstore8:
	MOVQ    b+40(FP), DX
	LEAQ    (DI)(R13*4), BX
	STORE2(Z0, Z1)
	STORE2(Z2, Z3)
	STORE2(Z4, Z5)
	STORE2(Z6, Z7)
	STORE2(Z14, Z15)
	STORE2(Z16, Z17)
	STORE2(Z18, Z19)
	STORE2(Z20, Z21)
	ADDQ    $32, R13
	JMP     mmchunk8
mmone8:
	CALL   mmmasks<>(SB)
	VXORPS Z0, Z0, Z0
	VXORPS Z2, Z2, Z2
	VXORPS Z4, Z4, Z4
	VXORPS Z6, Z6, Z6
	VXORPS Z14, Z14, Z14
	VXORPS Z16, Z16, Z16
	VXORPS Z18, Z18, Z18
	VXORPS Z20, Z20, Z20
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	LEAQ   (SI)(R9*4), DX
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmstoreone8
mmloopone8:
	VMOVUPS.Z    (BX), K1, Z8
	VBROADCASTSS (AX), Z10
	VBROADCASTSS (AX)(R9*1), Z11
	VBROADCASTSS (AX)(R9*2), Z12
	VBROADCASTSS (AX)(R12*1), Z13
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z8, Z13, Z6
	VBROADCASTSS (DX), Z10
	VBROADCASTSS (DX)(R9*1), Z11
	VBROADCASTSS (DX)(R9*2), Z12
	VBROADCASTSS (DX)(R12*1), Z13
	VFMADD231PS  Z8, Z10, Z14
	VFMADD231PS  Z8, Z11, Z16
	VFMADD231PS  Z8, Z12, Z18
	VFMADD231PS  Z8, Z13, Z20
	ADDQ         R10, AX
	ADDQ         R10, DX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmloopone8
mmstoreone8:
	MOVQ b+40(FP), DX
	LEAQ (DI)(R13*4), BX
	STORE1(Z0)
	STORE1(Z2)
	STORE1(Z4)
	STORE1(Z6)
	STORE1(Z14)
	STORE1(Z16)
	STORE1(Z18)
	STORE1(Z20)
	ADDQ $32, R13
	JMP  mmchunk8
mmnext8:
	LEAQ (SI)(R9*8), SI
	LEAQ (DI)(R8*8), DI
	SUBQ $8, m+56(FP)
	JMP  mmrows8

mmrows4:
	CMPQ m+56(FP), $4
	JLT  mmrows1
	XORQ R13, R13 // column
mmchunk4:
	CMPQ R13, n+64(FP)
	JGE  mmnext4
	MOVQ n+64(FP), CX
	SUBQ R13, CX
	CALL mmmasks<>(SB)
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmstore4
mmloop4:
	VMOVUPS.Z    (BX), K1, Z8
	VMOVUPS.Z    64(BX), K2, Z9
	VBROADCASTSS (AX), Z10
	VBROADCASTSS (AX)(R9*1), Z11
	VBROADCASTSS (AX)(R9*2), Z12
	VBROADCASTSS (AX)(R12*1), Z13
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	ADDQ         R10, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmloop4
mmstore4:
	LEAQ    (DI)(R13*4), BX
	VMULPS  Z31, Z0, Z0
	VMULPS  Z31, Z1, Z1
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K2, 64(BX)
	ADDQ    R8, BX
	VMULPS  Z31, Z2, Z2
	VMULPS  Z31, Z3, Z3
	VMOVUPS Z2, K1, (BX)
	VMOVUPS Z3, K2, 64(BX)
	ADDQ    R8, BX
	VMULPS  Z31, Z4, Z4
	VMULPS  Z31, Z5, Z5
	VMOVUPS Z4, K1, (BX)
	VMOVUPS Z5, K2, 64(BX)
	ADDQ    R8, BX
	VMULPS  Z31, Z6, Z6
	VMULPS  Z31, Z7, Z7
	VMOVUPS Z6, K1, (BX)
	VMOVUPS Z7, K2, 64(BX)
	ADDQ    $32, R13
	JMP     mmchunk4
mmnext4:
	LEAQ (SI)(R9*4), SI
	LEAQ (DI)(R8*4), DI
	SUBQ $4, m+56(FP)
	JMP  mmrows4

mmrows1:
	CMPQ m+56(FP), $0
	JLE  mmdone
	XORQ R13, R13
mmchunk1:
	CMPQ R13, n+64(FP)
	JGE  mmnext1
	MOVQ n+64(FP), CX
	SUBQ R13, CX
	CALL mmmasks<>(SB)
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmstore1
mmloop1:
	VMOVUPS.Z    (BX), K1, Z8
	VMOVUPS.Z    64(BX), K2, Z9
	VBROADCASTSS (AX), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	ADDQ         R10, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmloop1
mmstore1:
	LEAQ    (DI)(R13*4), BX
	VMULPS  Z31, Z0, Z0
	VMULPS  Z31, Z1, Z1
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K2, 64(BX)
	ADDQ    $32, R13
	JMP     mmchunk1
mmnext1:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ m+56(FP)
	JMP  mmrows1
mmdone:
	VZEROUPPER
	RET

// mmmasks sets K1 and K2 to the lanes of a 32-column chunk of which CX ≥ 1 columns are
// left: K1 covers the first 16, K2 the next 16. Clobbers AX and CX.
TEXT mmmasks<>(SB), NOSPLIT|NOFRAME, $0-0
	CMPQ  CX, $16
	JAE   mmfirstfull
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	KXORW K2, K2, K2
	RET
mmfirstfull:
	MOVL  $0xffff, AX
	KMOVW AX, K1
	SUBQ  $16, CX
	CMPQ  CX, $16
	JAE   mmsecondfull
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K2
	RET
mmsecondfull:
	KMOVW AX, K2
	RET

// func transpose32(dst, src *float32, rows, cols, lds int)
// dst[j·rows + i] = src[i·lds + j] for i < rows, j < cols: column j of src, gathered 16
// rows at a time, becomes row j of dst.
TEXT ·transpose32(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R9
	MOVQ cols+24(FP), R10
	MOVQ lds+32(FP), R11
	// Z1 = (0, 1, …, 15)·lds as int32 lane offsets
	MOVQ         $0x0706050403020100, AX
	VMOVQ        AX, X1
	MOVQ         $0x0f0e0d0c0b0a0908, AX
	VPINSRQ      $1, AX, X1, X1
	VPMOVZXBD    X1, Z1
	VPBROADCASTD R11, Z4
	VPMULLD      Z4, Z1, Z1
	MOVQ         R11, R12
	SHLQ         $6, R12    // 16 rows of src, in bytes
	MOVQ         R9, BX
	ANDQ         $~15, BX   // rows in whole groups of 16
	MOVQ         R9, CX
	SUBQ         BX, CX
	MOVL         $1, R13
	SHLL         CX, R13
	DECL         R13        // mask of the last group
	XORQ         DX, DX     // column j
trcol:
	CMPQ DX, R10
	JGE  trdone
	LEAQ (SI)(DX*4), R8 // &src[0, j]
	XORQ AX, AX         // row i
trrow:
	CMPQ        AX, BX
	JGE         trtail
	KXNORW      K1, K1, K1
	VGATHERDPS  (R8)(Z1*4), K1, Z0
	VMOVUPS     Z0, (DI)(AX*4)
	ADDQ        R12, R8
	ADDQ        $16, AX
	JMP         trrow
trtail:
	CMPQ        AX, R9
	JGE         trnext
	KMOVW       R13, K1
	KMOVW       R13, K2
	VXORPS      Z0, Z0, Z0
	VGATHERDPS  (R8)(Z1*4), K1, Z0
	VMOVUPS     Z0, K2, (DI)(AX*4)
trnext:
	LEAQ (DI)(R9*4), DI
	INCQ DX
	JMP  trcol
trdone:
	VZEROUPPER
	RET
