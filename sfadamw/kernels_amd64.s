//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// AVX-512F and AVX2 versions of sfAdamWGo and adamWGo (kernels.go). Every lane performs the
// reference kernel's operations in the reference's order with correctly rounded IEEE
// instructions (no FMA, no approximate reciprocal or square root), so the results are
// bitwise identical to the Go loops. Plan 9 operand order: VOPPS b, a, dst computes
// dst = a op b, so VSUBPS b, a, d is d = a − b and VDIVPS b, a, d is d = a / b.

// ---------------------------------------------------------------------------------------
// SF-AdamW
//
//	g' = g·gs
//	v  = β2·v + ((1−β2)·g')·g'
//	d  = g'/(√v·rs + ε) + λ·y
//	y  = (y + c·(z − y)) + coef·d
//	z  = z − γ·d
//
// Inputs in registers 0 (g), 1 (v), 4 (y), 6 (z); outputs in 1 (v), 7 (y), 6 (z).
// Scratch: 2, 3, 5, 8.

// SF512 computes one vector of the SF-AdamW kernel on ZMM registers; the scalars are
// broadcast in Z16 (β2), Z17 (1−β2), Z18 (rs), Z19 (ε), Z20 (λ), Z21 (gs), Z22 (c),
// Z23 (γ), Z24 (coef).
#define SF512 \
	VMULPS Z21, Z0, Z0 \
	; VMULPS Z16, Z1, Z1 \
	; VMULPS Z17, Z0, Z2 \
	; VMULPS Z0, Z2, Z2 \
	; VADDPS Z2, Z1, Z1 \
	; VSQRTPS Z1, Z2 \
	; VMULPS Z18, Z2, Z2 \
	; VADDPS Z19, Z2, Z2 \
	; VDIVPS Z2, Z0, Z3 \
	; VMULPS Z20, Z4, Z5 \
	; VADDPS Z5, Z3, Z3 \
	; VSUBPS Z4, Z6, Z7 \
	; VMULPS Z22, Z7, Z7 \
	; VADDPS Z7, Z4, Z7 \
	; VMULPS Z24, Z3, Z8 \
	; VADDPS Z8, Z7, Z7 \
	; VMULPS Z23, Z3, Z8 \
	; VSUBPS Z8, Z6, Z6

// func sfAdamWAVX512(grad, y, z, v *float32, n int, k *sfScalars)
TEXT ·sfAdamWAVX512(SB), NOSPLIT, $0-48
	MOVQ grad+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ z+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), R8

	VBROADCASTSS sfScalars_b2(R8), Z16
	VBROADCASTSS sfScalars_omb2(R8), Z17
	VBROADCASTSS sfScalars_rs(R8), Z18
	VBROADCASTSS sfScalars_eps(R8), Z19
	VBROADCASTSS sfScalars_wd(R8), Z20
	VBROADCASTSS sfScalars_gs(R8), Z21
	VBROADCASTSS sfScalars_c(R8), Z22
	VBROADCASTSS sfScalars_lr(R8), Z23
	VBROADCASTSS sfScalars_coef(R8), Z24

	XORQ AX, AX   // element index
	MOVQ CX, BX
	ANDQ $~15, BX // elements handled 16 at a time
	JZ   sf512tail

sf512loop:
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS (R10)(AX*4), Z1
	VMOVUPS (DI)(AX*4), Z4
	VMOVUPS (R9)(AX*4), Z6
	SF512
	VMOVUPS Z1, (R10)(AX*4)
	VMOVUPS Z7, (DI)(AX*4)
	VMOVUPS Z6, (R9)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      sf512loop

sf512tail:
	ANDQ  $15, CX // remaining elements, 0..15
	JZ    sf512done
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX      // mask of the low CX lanes
	KMOVW DX, K1
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMOVUPS.Z (R10)(AX*4), K1, Z1
	VMOVUPS.Z (DI)(AX*4), K1, Z4
	VMOVUPS.Z (R9)(AX*4), K1, Z6
	SF512
	VMOVUPS Z1, K1, (R10)(AX*4)
	VMOVUPS Z7, K1, (DI)(AX*4)
	VMOVUPS Z6, K1, (R9)(AX*4)

sf512done:
	VZEROUPPER
	RET

// SF256 is SF512 on YMM registers, with the scalars broadcast in Y9 (β2), Y10 (1−β2),
// Y11 (rs), Y12 (ε), Y13 (λ), Y14 (gs), Y15 (c) and, from memory, γ and coef (AVX2 has 16
// vector registers only).
#define SF256 \
	VMULPS Y14, Y0, Y0 \
	; VMULPS Y9, Y1, Y1 \
	; VMULPS Y10, Y0, Y2 \
	; VMULPS Y0, Y2, Y2 \
	; VADDPS Y2, Y1, Y1 \
	; VSQRTPS Y1, Y2 \
	; VMULPS Y11, Y2, Y2 \
	; VADDPS Y12, Y2, Y2 \
	; VDIVPS Y2, Y0, Y3 \
	; VMULPS Y13, Y4, Y5 \
	; VADDPS Y5, Y3, Y3 \
	; VSUBPS Y4, Y6, Y7 \
	; VMULPS Y15, Y7, Y7 \
	; VADDPS Y7, Y4, Y7 \
	; VBROADCASTSS sfScalars_coef(R8), Y8 \
	; VMULPS Y8, Y3, Y8 \
	; VADDPS Y8, Y7, Y7 \
	; VBROADCASTSS sfScalars_lr(R8), Y8 \
	; VMULPS Y8, Y3, Y8 \
	; VSUBPS Y8, Y6, Y6

// SF1 is the same computation on one element in the low lanes of X registers, with
// scalar SSE instructions.
#define SF1 \
	MULSS X14, X0 \
	; MULSS X9, X1 \
	; MOVSS X10, X2 \
	; MULSS X0, X2 \
	; MULSS X0, X2 \
	; ADDSS X2, X1 \
	; SQRTSS X1, X2 \
	; MULSS X11, X2 \
	; ADDSS X12, X2 \
	; MOVSS X0, X3 \
	; DIVSS X2, X3 \
	; MOVSS X13, X5 \
	; MULSS X4, X5 \
	; ADDSS X5, X3 \
	; MOVSS X6, X7 \
	; SUBSS X4, X7 \
	; MULSS X15, X7 \
	; ADDSS X4, X7 \
	; MOVSS sfScalars_coef(R8), X8 \
	; MULSS X3, X8 \
	; ADDSS X8, X7 \
	; MOVSS sfScalars_lr(R8), X8 \
	; MULSS X3, X8 \
	; SUBSS X8, X6

// func sfAdamWAVX2(grad, y, z, v *float32, n int, k *sfScalars)
TEXT ·sfAdamWAVX2(SB), NOSPLIT, $0-48
	MOVQ grad+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ z+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), R8

	VBROADCASTSS sfScalars_b2(R8), Y9
	VBROADCASTSS sfScalars_omb2(R8), Y10
	VBROADCASTSS sfScalars_rs(R8), Y11
	VBROADCASTSS sfScalars_eps(R8), Y12
	VBROADCASTSS sfScalars_wd(R8), Y13
	VBROADCASTSS sfScalars_gs(R8), Y14
	VBROADCASTSS sfScalars_c(R8), Y15

	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $~7, BX // elements handled 8 at a time
	JZ   sf256tail

sf256loop:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (R10)(AX*4), Y1
	VMOVUPS (DI)(AX*4), Y4
	VMOVUPS (R9)(AX*4), Y6
	SF256
	VMOVUPS Y1, (R10)(AX*4)
	VMOVUPS Y7, (DI)(AX*4)
	VMOVUPS Y6, (R9)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      sf256loop

sf256tail:
	VZEROUPPER // the tail uses legacy SSE instructions
	CMPQ AX, CX
	JAE  sf256done

sf256one:
	MOVSS (SI)(AX*4), X0
	MOVSS (R10)(AX*4), X1
	MOVSS (DI)(AX*4), X4
	MOVSS (R9)(AX*4), X6
	SF1
	MOVSS X1, (R10)(AX*4)
	MOVSS X7, (DI)(AX*4)
	MOVSS X6, (R9)(AX*4)
	INCQ  AX
	CMPQ  AX, CX
	JB    sf256one

sf256done:
	RET

// ---------------------------------------------------------------------------------------
// AdamW
//
//	g' = g·gs
//	m  = β1·m + (1−β1)·g'
//	v  = β2·v + ((1−β2)·g')·g'
//	p  = p·decay − (step·m)/(√v·rs + ε)
//
// Inputs in registers 0 (g), 1 (m), 2 (v), 4 (p); outputs in 1 (m), 2 (v), 4 (p).
// Scratch: 3, 5.

// ADAM512 computes one vector of the AdamW kernel on ZMM registers; the scalars are
// broadcast in Z16 (decay), Z17 (β1), Z18 (1−β1), Z19 (β2), Z20 (1−β2), Z21 (step),
// Z22 (rs), Z23 (ε), Z24 (gs).
#define ADAM512 \
	VMULPS Z24, Z0, Z0 \
	; VMULPS Z17, Z1, Z1 \
	; VMULPS Z18, Z0, Z3 \
	; VADDPS Z3, Z1, Z1 \
	; VMULPS Z19, Z2, Z2 \
	; VMULPS Z20, Z0, Z3 \
	; VMULPS Z0, Z3, Z3 \
	; VADDPS Z3, Z2, Z2 \
	; VSQRTPS Z2, Z3 \
	; VMULPS Z22, Z3, Z3 \
	; VADDPS Z23, Z3, Z3 \
	; VMULPS Z21, Z1, Z5 \
	; VDIVPS Z3, Z5, Z5 \
	; VMULPS Z16, Z4, Z4 \
	; VSUBPS Z5, Z4, Z4

// func adamWAVX512(grad, p, m, v *float32, n int, k *adamScalars)
TEXT ·adamWAVX512(SB), NOSPLIT, $0-48
	MOVQ grad+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ m+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), R8

	VBROADCASTSS adamScalars_decay(R8), Z16
	VBROADCASTSS adamScalars_b1(R8), Z17
	VBROADCASTSS adamScalars_omb1(R8), Z18
	VBROADCASTSS adamScalars_b2(R8), Z19
	VBROADCASTSS adamScalars_omb2(R8), Z20
	VBROADCASTSS adamScalars_step(R8), Z21
	VBROADCASTSS adamScalars_rs(R8), Z22
	VBROADCASTSS adamScalars_eps(R8), Z23
	VBROADCASTSS adamScalars_gs(R8), Z24

	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $~15, BX
	JZ   adam512tail

adam512loop:
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS (R9)(AX*4), Z1
	VMOVUPS (R10)(AX*4), Z2
	VMOVUPS (DI)(AX*4), Z4
	ADAM512
	VMOVUPS Z1, (R9)(AX*4)
	VMOVUPS Z2, (R10)(AX*4)
	VMOVUPS Z4, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JB      adam512loop

adam512tail:
	ANDQ  $15, CX
	JZ    adam512done
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX
	KMOVW DX, K1
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMOVUPS.Z (R9)(AX*4), K1, Z1
	VMOVUPS.Z (R10)(AX*4), K1, Z2
	VMOVUPS.Z (DI)(AX*4), K1, Z4
	ADAM512
	VMOVUPS Z1, K1, (R9)(AX*4)
	VMOVUPS Z2, K1, (R10)(AX*4)
	VMOVUPS Z4, K1, (DI)(AX*4)

adam512done:
	VZEROUPPER
	RET

// ADAM256 is ADAM512 on YMM registers, with the scalars broadcast in Y7 (decay), Y8 (β1),
// Y9 (1−β1), Y10 (β2), Y11 (1−β2), Y12 (step), Y13 (rs), Y14 (ε), Y15 (gs).
#define ADAM256 \
	VMULPS Y15, Y0, Y0 \
	; VMULPS Y8, Y1, Y1 \
	; VMULPS Y9, Y0, Y3 \
	; VADDPS Y3, Y1, Y1 \
	; VMULPS Y10, Y2, Y2 \
	; VMULPS Y11, Y0, Y3 \
	; VMULPS Y0, Y3, Y3 \
	; VADDPS Y3, Y2, Y2 \
	; VSQRTPS Y2, Y3 \
	; VMULPS Y13, Y3, Y3 \
	; VADDPS Y14, Y3, Y3 \
	; VMULPS Y12, Y1, Y5 \
	; VDIVPS Y3, Y5, Y5 \
	; VMULPS Y7, Y4, Y4 \
	; VSUBPS Y5, Y4, Y4

// ADAM1 is the same computation on one element with scalar SSE instructions.
#define ADAM1 \
	MULSS X15, X0 \
	; MULSS X8, X1 \
	; MOVSS X9, X3 \
	; MULSS X0, X3 \
	; ADDSS X3, X1 \
	; MULSS X10, X2 \
	; MOVSS X11, X3 \
	; MULSS X0, X3 \
	; MULSS X0, X3 \
	; ADDSS X3, X2 \
	; SQRTSS X2, X3 \
	; MULSS X13, X3 \
	; ADDSS X14, X3 \
	; MOVSS X12, X5 \
	; MULSS X1, X5 \
	; DIVSS X3, X5 \
	; MULSS X7, X4 \
	; SUBSS X5, X4

// func adamWAVX2(grad, p, m, v *float32, n int, k *adamScalars)
TEXT ·adamWAVX2(SB), NOSPLIT, $0-48
	MOVQ grad+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ m+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), R8

	VBROADCASTSS adamScalars_decay(R8), Y7
	VBROADCASTSS adamScalars_b1(R8), Y8
	VBROADCASTSS adamScalars_omb1(R8), Y9
	VBROADCASTSS adamScalars_b2(R8), Y10
	VBROADCASTSS adamScalars_omb2(R8), Y11
	VBROADCASTSS adamScalars_step(R8), Y12
	VBROADCASTSS adamScalars_rs(R8), Y13
	VBROADCASTSS adamScalars_eps(R8), Y14
	VBROADCASTSS adamScalars_gs(R8), Y15

	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $~7, BX
	JZ   adam256tail

adam256loop:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (R9)(AX*4), Y1
	VMOVUPS (R10)(AX*4), Y2
	VMOVUPS (DI)(AX*4), Y4
	ADAM256
	VMOVUPS Y1, (R9)(AX*4)
	VMOVUPS Y2, (R10)(AX*4)
	VMOVUPS Y4, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      adam256loop

adam256tail:
	VZEROUPPER
	CMPQ AX, CX
	JAE  adam256done

adam256one:
	MOVSS (SI)(AX*4), X0
	MOVSS (R9)(AX*4), X1
	MOVSS (R10)(AX*4), X2
	MOVSS (DI)(AX*4), X4
	ADAM1
	MOVSS X1, (R9)(AX*4)
	MOVSS X2, (R10)(AX*4)
	MOVSS X4, (DI)(AX*4)
	INCQ  AX
	CMPQ  AX, CX
	JB    adam256one

adam256done:
	RET
