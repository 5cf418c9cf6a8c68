//go:build amd64 && !purego

#include "textflag.h"

// AVX-512F float32 kernels of the exact GELU, x·Φ(x) with Φ(x) = ½(1 + erf(x/√2)), in the
// conventions of kernels_amd64.s (whose EXPCONST/EXP macros are repeated here, since
// macros do not cross files). erf(u), u = |x|/√2, is Abramowitz & Stegun 7.1.26:
// 1 − t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))·e^(−u²), t = 1/(1 + p·u), absolute error
// ≤ 1.5e-7 (the approximation oneDNN uses for its erf GELU); e^(−u²) = e^(−x²/2) is also
// the density term of the backward pass.

#define TAILMASK \
	MOVL  $1, R8 \
	; SHLL CX, R8 \
	; DECL R8 \
	; KMOVW R8, K1

#define EXPCONST \
	MOVL $0x3fb8aa3b, AX; VPBROADCASTD AX, Z16 \
	; MOVL $0x3f318000, AX; VPBROADCASTD AX, Z17 \
	; MOVL $0xb95e8083, AX; VPBROADCASTD AX, Z18 \
	; MOVL $0x39506967, AX; VPBROADCASTD AX, Z19 \
	; MOVL $0x3ab743ce, AX; VPBROADCASTD AX, Z20 \
	; MOVL $0x3c088908, AX; VPBROADCASTD AX, Z21 \
	; MOVL $0x3d2aa9c1, AX; VPBROADCASTD AX, Z22 \
	; MOVL $0x3e2aaaaa, AX; VPBROADCASTD AX, Z23 \
	; MOVL $0x3f000000, AX; VPBROADCASTD AX, Z24 \
	; MOVL $0x3f800000, AX; VPBROADCASTD AX, Z25

#define EXP(A, B, C) \
	VMULPS Z16, A, B \
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

// GELUCONST loads, besides EXPCONST: Z11 = −200 (clamp of the exponent, below which e^x
// is 0 in float32, so that no NaN comes from x² = +Inf), Z12 = 1/√(2π), Z13 = abs mask,
// Z14 = sign mask, Z15 = a1, Z26 = 1/√2, Z27 = p, Z28…Z31 = a5, a4, a3, a2.
#define GELUCONST \
	EXPCONST \
	; MOVL $0xc3480000, AX; VPBROADCASTD AX, Z11 \
	; MOVL $0x3ecc422a, AX; VPBROADCASTD AX, Z12 \
	; MOVL $0x7fffffff, AX; VPBROADCASTD AX, Z13 \
	; MOVL $0x80000000, AX; VPBROADCASTD AX, Z14 \
	; MOVL $0x3e827906, AX; VPBROADCASTD AX, Z15 \
	; MOVL $0x3f3504f3, AX; VPBROADCASTD AX, Z26 \
	; MOVL $0x3ea7ba05, AX; VPBROADCASTD AX, Z27 \
	; MOVL $0x3f87dc22, AX; VPBROADCASTD AX, Z28 \
	; MOVL $0xbfba00e3, AX; VPBROADCASTD AX, Z29 \
	; MOVL $0x3fb5f0e3, AX; VPBROADCASTD AX, Z30 \
	; MOVL $0xbe91a98e, AX; VPBROADCASTD AX, Z31

// PHI computes Φ(x) into Z6 and e^(−x²/2) into Z7 from x in Z2; Z3, Z4, Z5 scratch.
#define PHI \
	VMULPS Z2, Z2, Z7 \
	; VMULPS Z24, Z7, Z7 \
	; VXORPS Z3, Z3, Z3 \
	; VSUBPS Z7, Z3, Z7 \
	; VMAXPS Z11, Z7, Z7 \
	; EXP(Z7, Z3, Z4) \
	; VPANDD Z13, Z2, Z5 \
	; VMULPS Z26, Z5, Z5 \
	; VFMADD213PS Z25, Z27, Z5 \
	; VDIVPS Z5, Z25, Z5 \
	; VMOVAPS Z28, Z6 \
	; VFMADD213PS Z29, Z5, Z6 \
	; VFMADD213PS Z30, Z5, Z6 \
	; VFMADD213PS Z31, Z5, Z6 \
	; VFMADD213PS Z15, Z5, Z6 \
	; VMULPS Z5, Z6, Z6 \
	; VMULPS Z7, Z6, Z6 \
	; VFNMADD213PS Z24, Z24, Z6 \
	; VPANDD Z14, Z2, Z3 \
	; VPORD Z3, Z6, Z6 \
	; VADDPS Z24, Z6, Z6

// func geluForward32AVX512(out, x *float32, n int)
TEXT ·geluForward32AVX512(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), R9
	GELUCONST
	MOVQ R9, BX
	ANDQ $~15, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  gftail
gfloop:
	VMOVUPS (SI)(AX*4), Z2
	PHI
	VMULPS  Z2, Z6, Z6
	VMOVUPS Z6, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      gfloop
gftail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   gfdone
	TAILMASK
	VMOVUPS.Z (SI)(BX*4), K1, Z2
	PHI
	VMULPS    Z2, Z6, Z6
	VMOVUPS   Z6, K1, (DI)(BX*4)
gfdone:
	VZEROUPPER
	RET

// func geluBackward32AVX512(dx, dout, x *float32, n int)
// dx = dout·(Φ(x) + x·e^(−x²/2)/√(2π)), overwritten.
TEXT ·geluBackward32AVX512(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), R9
	GELUCONST
	MOVQ R9, BX
	ANDQ $~15, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  gbtail
gbloop:
	VMOVUPS (SI)(AX*4), Z2
	VMOVUPS (DX)(AX*4), Z9
	PHI
	VMULPS       Z7, Z2, Z8
	VFMADD231PS  Z12, Z8, Z6
	VMULPS       Z9, Z6, Z6
	VMOVUPS      Z6, (DI)(AX*4)
	ADDQ         $16, AX
	CMPQ         AX, BX
	JB           gbloop
gbtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   gbdone
	TAILMASK
	VMOVUPS.Z   (SI)(BX*4), K1, Z2
	VMOVUPS.Z   (DX)(BX*4), K1, Z9
	PHI
	VMULPS      Z7, Z2, Z8
	VFMADD231PS Z12, Z8, Z6
	VMULPS      Z9, Z6, Z6
	VMOVUPS     Z6, K1, (DI)(BX*4)
gbdone:
	VZEROUPPER
	RET
