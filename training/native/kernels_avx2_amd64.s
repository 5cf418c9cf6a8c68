//go:build amd64 && !purego

#include "textflag.h"

// AVX2 and FMA float32 kernels (see kernels_amd64.go): the kernels of kernels_amd64.s and
// kernels_gelu_amd64.s in 8-lane YMM registers, for CPUs without AVX-512F. They compute
// what the AVX-512 kernels compute, in the same order within each lane: fused
// multiply-adds, sums in 8 lanes reduced in a fixed order, e^x from the same polynomial.
//
// AVX2 has no lane masks: the tail of a row (fewer than 8 elements) is loaded and stored
// with VMASKMOVPS under a mask in Y15 (TAILMASK), which neither faults nor writes on the
// lanes left out, and loads zeros there. Constants are 8-lane vectors in avx2c<>, used as
// memory operands; the clamp bounds of EXP live in Y13 and Y14 (EXPCONST).
//
// Plan 9 operand order: the destination is last. VFMADD231PS b, a, d is d = a·b + d;
// VFNMADD231PS b, a, d is d = d − a·b; VFMADD213PS c, a, d is d = a·d + c;
// VFMADD132PS c, a, d is d = d·c + a; VFNMADD213PS c, a, d is d = c − a·d;
// VSUBPS b, a, d is d = a − b; VDIVPS b, a, d is d = a / b;
// VBLENDVPS m, b, a, d is d = m ? b : a (lane by lane, on the sign bit of m).

#define LOG2E avx2c<>+0(SB)
#define LN2HI avx2c<>+32(SB)
#define LN2LO avx2c<>+64(SB)
#define EXPP0 avx2c<>+96(SB)
#define EXPP1 avx2c<>+128(SB)
#define EXPP2 avx2c<>+160(SB)
#define EXPP3 avx2c<>+192(SB)
#define EXPP4 avx2c<>+224(SB)
#define HALF avx2c<>+256(SB)
#define ONE avx2c<>+288(SB)
#define BIAS avx2c<>+320(SB)
#define EXPLO avx2c<>+352(SB)
#define EXPHI avx2c<>+384(SB)
#define INVSQRT2PI avx2c<>+416(SB)
#define ABSMASK avx2c<>+448(SB)
#define SIGNMASK avx2c<>+480(SB)
#define ERFA1 avx2c<>+512(SB)
#define INVSQRT2 avx2c<>+544(SB)
#define ERFP avx2c<>+576(SB)
#define ERFA5 avx2c<>+608(SB)
#define ERFA4 avx2c<>+640(SB)
#define ERFA3 avx2c<>+672(SB)
#define ERFA2 avx2c<>+704(SB)

// 0: log2(e)
DATA avx2c<>+0(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2c<>+8(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2c<>+16(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2c<>+24(SB)/8, $0x3fb8aa3b3fb8aa3b
// 32: ln2, high part
DATA avx2c<>+32(SB)/8, $0x3f3180003f318000
DATA avx2c<>+40(SB)/8, $0x3f3180003f318000
DATA avx2c<>+48(SB)/8, $0x3f3180003f318000
DATA avx2c<>+56(SB)/8, $0x3f3180003f318000
// 64: ln2, low part
DATA avx2c<>+64(SB)/8, $0xb95e8083b95e8083
DATA avx2c<>+72(SB)/8, $0xb95e8083b95e8083
DATA avx2c<>+80(SB)/8, $0xb95e8083b95e8083
DATA avx2c<>+88(SB)/8, $0xb95e8083b95e8083
// 96: p0
DATA avx2c<>+96(SB)/8, $0x3950696739506967
DATA avx2c<>+104(SB)/8, $0x3950696739506967
DATA avx2c<>+112(SB)/8, $0x3950696739506967
DATA avx2c<>+120(SB)/8, $0x3950696739506967
// 128: p1
DATA avx2c<>+128(SB)/8, $0x3ab743ce3ab743ce
DATA avx2c<>+136(SB)/8, $0x3ab743ce3ab743ce
DATA avx2c<>+144(SB)/8, $0x3ab743ce3ab743ce
DATA avx2c<>+152(SB)/8, $0x3ab743ce3ab743ce
// 160: p2
DATA avx2c<>+160(SB)/8, $0x3c0889083c088908
DATA avx2c<>+168(SB)/8, $0x3c0889083c088908
DATA avx2c<>+176(SB)/8, $0x3c0889083c088908
DATA avx2c<>+184(SB)/8, $0x3c0889083c088908
// 192: p3
DATA avx2c<>+192(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2c<>+200(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2c<>+208(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2c<>+216(SB)/8, $0x3d2aa9c13d2aa9c1
// 224: p4
DATA avx2c<>+224(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2c<>+232(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2c<>+240(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2c<>+248(SB)/8, $0x3e2aaaaa3e2aaaaa
// 256: p5 = 1/2
DATA avx2c<>+256(SB)/8, $0x3f0000003f000000
DATA avx2c<>+264(SB)/8, $0x3f0000003f000000
DATA avx2c<>+272(SB)/8, $0x3f0000003f000000
DATA avx2c<>+280(SB)/8, $0x3f0000003f000000
// 288: 1
DATA avx2c<>+288(SB)/8, $0x3f8000003f800000
DATA avx2c<>+296(SB)/8, $0x3f8000003f800000
DATA avx2c<>+304(SB)/8, $0x3f8000003f800000
DATA avx2c<>+312(SB)/8, $0x3f8000003f800000
// 320: 127, the exponent bias (int32)
DATA avx2c<>+320(SB)/8, $0x0000007f0000007f
DATA avx2c<>+328(SB)/8, $0x0000007f0000007f
DATA avx2c<>+336(SB)/8, $0x0000007f0000007f
DATA avx2c<>+344(SB)/8, $0x0000007f0000007f
// 352: −110, the lower clamp of EXP
DATA avx2c<>+352(SB)/8, $0xc2dc0000c2dc0000
DATA avx2c<>+360(SB)/8, $0xc2dc0000c2dc0000
DATA avx2c<>+368(SB)/8, $0xc2dc0000c2dc0000
DATA avx2c<>+376(SB)/8, $0xc2dc0000c2dc0000
// 384: 89, the upper clamp of EXP
DATA avx2c<>+384(SB)/8, $0x42b2000042b20000
DATA avx2c<>+392(SB)/8, $0x42b2000042b20000
DATA avx2c<>+400(SB)/8, $0x42b2000042b20000
DATA avx2c<>+408(SB)/8, $0x42b2000042b20000
// 416: 1/√(2π)
DATA avx2c<>+416(SB)/8, $0x3ecc422a3ecc422a
DATA avx2c<>+424(SB)/8, $0x3ecc422a3ecc422a
DATA avx2c<>+432(SB)/8, $0x3ecc422a3ecc422a
DATA avx2c<>+440(SB)/8, $0x3ecc422a3ecc422a
// 448: abs mask
DATA avx2c<>+448(SB)/8, $0x7fffffff7fffffff
DATA avx2c<>+456(SB)/8, $0x7fffffff7fffffff
DATA avx2c<>+464(SB)/8, $0x7fffffff7fffffff
DATA avx2c<>+472(SB)/8, $0x7fffffff7fffffff
// 480: sign mask
DATA avx2c<>+480(SB)/8, $0x8000000080000000
DATA avx2c<>+488(SB)/8, $0x8000000080000000
DATA avx2c<>+496(SB)/8, $0x8000000080000000
DATA avx2c<>+504(SB)/8, $0x8000000080000000
// 512: a1
DATA avx2c<>+512(SB)/8, $0x3e8279063e827906
DATA avx2c<>+520(SB)/8, $0x3e8279063e827906
DATA avx2c<>+528(SB)/8, $0x3e8279063e827906
DATA avx2c<>+536(SB)/8, $0x3e8279063e827906
// 544: 1/√2
DATA avx2c<>+544(SB)/8, $0x3f3504f33f3504f3
DATA avx2c<>+552(SB)/8, $0x3f3504f33f3504f3
DATA avx2c<>+560(SB)/8, $0x3f3504f33f3504f3
DATA avx2c<>+568(SB)/8, $0x3f3504f33f3504f3
// 576: p of A&S 7.1.26
DATA avx2c<>+576(SB)/8, $0x3ea7ba053ea7ba05
DATA avx2c<>+584(SB)/8, $0x3ea7ba053ea7ba05
DATA avx2c<>+592(SB)/8, $0x3ea7ba053ea7ba05
DATA avx2c<>+600(SB)/8, $0x3ea7ba053ea7ba05
// 608: a5
DATA avx2c<>+608(SB)/8, $0x3f87dc223f87dc22
DATA avx2c<>+616(SB)/8, $0x3f87dc223f87dc22
DATA avx2c<>+624(SB)/8, $0x3f87dc223f87dc22
DATA avx2c<>+632(SB)/8, $0x3f87dc223f87dc22
// 640: a4
DATA avx2c<>+640(SB)/8, $0xbfba00e3bfba00e3
DATA avx2c<>+648(SB)/8, $0xbfba00e3bfba00e3
DATA avx2c<>+656(SB)/8, $0xbfba00e3bfba00e3
DATA avx2c<>+664(SB)/8, $0xbfba00e3bfba00e3
// 672: a3
DATA avx2c<>+672(SB)/8, $0x3fb5f0e33fb5f0e3
DATA avx2c<>+680(SB)/8, $0x3fb5f0e33fb5f0e3
DATA avx2c<>+688(SB)/8, $0x3fb5f0e33fb5f0e3
DATA avx2c<>+696(SB)/8, $0x3fb5f0e33fb5f0e3
// 704: a2
DATA avx2c<>+704(SB)/8, $0xbe91a98ebe91a98e
DATA avx2c<>+712(SB)/8, $0xbe91a98ebe91a98e
DATA avx2c<>+720(SB)/8, $0xbe91a98ebe91a98e
DATA avx2c<>+728(SB)/8, $0xbe91a98ebe91a98e
GLOBL avx2c<>(SB), RODATA|NOPTR, $736

// eight lanes set, then sixteen clear: 32 − 4r bytes in, eight lanes with the first r set
DATA avx2tail<>+0(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+8(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+16(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+24(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+32(SB)/8, $0x0000000000000000
DATA avx2tail<>+40(SB)/8, $0x0000000000000000
DATA avx2tail<>+48(SB)/8, $0x0000000000000000
DATA avx2tail<>+56(SB)/8, $0x0000000000000000
DATA avx2tail<>+64(SB)/8, $0x0000000000000000
DATA avx2tail<>+72(SB)/8, $0x0000000000000000
DATA avx2tail<>+80(SB)/8, $0x0000000000000000
DATA avx2tail<>+88(SB)/8, $0x0000000000000000
GLOBL avx2tail<>(SB), RODATA|NOPTR, $96

// TAILMASK sets Y15 to the lowest CX lanes (1 ≤ CX ≤ 7); clobbers R8 and CX.
#define TAILMASK \
	LEAQ avx2tail<>+32(SB), R8 \
	; NEGQ CX \
	; VMOVDQU (R8)(CX*4), Y15

// EXPCONST loads the clamp bounds of EXP: Y13 = −110, Y14 = 89.
#define EXPCONST \
	VMOVUPS EXPLO, Y13 \
	; VMOVUPS EXPHI, Y14

// EXP replaces A by e^A, as the EXP of kernels_amd64.s: A = n·ln2 + r with
// n = round(A·log2 e) and |r| ≤ ln2/2 (ln2 in two parts), e^r = 1 + r + r²·P(r) with P of
// degree 5. AVX2 has no VSCALEFPS: A is first clamped to [−110, 89] (beyond which e^A is 0
// or +Inf in float32; NaN stays NaN), and e^r·2^n is formed as (e^r·2^⌊n/2⌋)·2^⌈n/2⌉, two
// powers of two with normal exponents, so that only the last product rounds, to a
// subnormal, 0 or +Inf where it must. Relative error about 2 ulp. B, C and D are scratch.
#define EXP(A, B, C, D) \
	VMAXPS A, Y13, A \
	; VMINPS A, Y14, A \
	; VMULPS LOG2E, A, B \
	; VROUNDPS $0, B, B \
	; VFNMADD231PS LN2HI, B, A \
	; VFNMADD231PS LN2LO, B, A \
	; VMOVUPS EXPP0, C \
	; VFMADD213PS EXPP1, A, C \
	; VFMADD213PS EXPP2, A, C \
	; VFMADD213PS EXPP3, A, C \
	; VFMADD213PS EXPP4, A, C \
	; VFMADD213PS HALF, A, C \
	; VFMADD213PS ONE, A, C \
	; VFMADD213PS ONE, A, C \
	; VCVTPS2DQ B, B \
	; VPSRAD $1, B, D \
	; VPSUBD D, B, B \
	; VPADDD BIAS, D, D \
	; VPADDD BIAS, B, B \
	; VPSLLD $23, D, D \
	; VPSLLD $23, B, B \
	; VMULPS D, C, C \
	; VMULPS B, C, A

// HSUM leaves the sum of the lanes of Y0 in X0 (lane 0); clobbers Y1.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1 \
	; VADDPS X1, X0, X0 \
	; VPERMILPS $0x4e, X0, X1 \
	; VADDPS X1, X0, X0 \
	; VPERMILPS $0xb1, X0, X1 \
	; VADDPS X1, X0, X0

// SWAPACC swaps the accumulators a and b through t. A reduction keeps the 16 lanes of the
// AVX-512 kernel in two 8-lane accumulators: the vector of elements 8k..8k+7 goes to the
// accumulator of lanes 0–7 when k is even, of lanes 8–15 when k is odd, so a swaps with b
// after each vector, and a is always the one the next vector goes to (the tail too).
// Adding the two (in either order: addition is commutative) is the AVX-512 kernel's first
// step of HSUM, lanes j and j+8; the rest of HSUM is the same tree. So every reduction
// gives the AVX-512 kernel's bits.
#define SWAPACC(a, b, t) \
	VMOVAPS a, t \
	; VMOVAPS b, a \
	; VMOVAPS t, b

// HMAX leaves the maximum of the lanes of Y0 in X0 (lane 0); clobbers Y1.
#define HMAX \
	VEXTRACTF128 $1, Y0, X1 \
	; VMAXPS X1, X0, X0 \
	; VPERMILPS $0x4e, X0, X1 \
	; VMAXPS X1, X0, X0 \
	; VPERMILPS $0xb1, X0, X1 \
	; VMAXPS X1, X0, X0

// func softmax32AVX2(x *float32, n int) (mx, sum float32)
// n ≥ 1. x[i] = e^(x[i]−mx)/sum in place, mx = max x, sum = Σ e^(x[i]−mx).
TEXT ·softmax32AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), R9
	MOVQ R9, BX
	ANDQ $~7, BX // elements in whole vectors
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   smnomask
	TAILMASK
smnomask:
	// pass 1: the maximum
	VBROADCASTSS (SI), Y0
	XORQ AX, AX
	CMPQ AX, BX
	JAE  maxtail
maxloop:
	VMAXPS (SI)(AX*4), Y0, Y0
	ADDQ   $8, AX
	CMPQ   AX, BX
	JB     maxloop
maxtail:
	CMPQ       BX, R9
	JE         maxdone
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VBLENDVPS  Y15, Y2, Y0, Y2
	VMAXPS     Y2, Y0, Y0
maxdone:
	HMAX
	VMOVSS       X0, mx+16(FP)
	VBROADCASTSS X0, Y12

	// pass 2: e^(x−mx) and its sum, in the 16 lanes of the AVX-512 kernel (SWAPACC)
	EXPCONST
	VXORPS Y11, Y11, Y11
	VXORPS Y10, Y10, Y10
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    exptail
exploop:
	VMOVUPS (SI)(AX*4), Y2
	VSUBPS  Y12, Y2, Y2
	EXP(Y2, Y3, Y4, Y5)
	VMOVUPS Y2, (SI)(AX*4)
	VADDPS  Y2, Y11, Y11
	SWAPACC(Y11, Y10, Y9)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      exploop
exptail:
	CMPQ       BX, R9
	JE         expdone
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VSUBPS     Y12, Y2, Y2
	EXP(Y2, Y3, Y4, Y5)
	VMASKMOVPS Y2, Y15, (SI)(BX*4)
	VANDPS     Y15, Y2, Y2
	VADDPS     Y2, Y11, Y11
expdone:
	VADDPS Y10, Y11, Y0
	HSUM
	VMOVSS  X0, sum+20(FP)

	// pass 3: scale by 1/sum
	VBROADCASTSS X0, Y1
	VMOVUPS      ONE, Y12
	VDIVPS       Y1, Y12, Y12 // 1/sum
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          scaletail
scaleloop:
	VMULPS  (SI)(AX*4), Y12, Y2
	VMOVUPS Y2, (SI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      scaleloop
scaletail:
	CMPQ       BX, R9
	JE         scaledone
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VMULPS     Y12, Y2, Y2
	VMASKMOVPS Y2, Y15, (SI)(BX*4)
scaledone:
	VZEROUPPER
	RET

// func softmaxBackward32AVX2(dp, p *float32, n int, scale float32)
// dp[i] = scale·p[i]·(dp[i] − Σ p·dp).
TEXT ·softmaxBackward32AVX2(SB), NOSPLIT, $0-28
	MOVQ         dp+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         n+16(FP), R9
	VBROADCASTSS scale+24(FP), Y12
	MOVQ         R9, BX
	ANDQ         $~7, BX
	MOVQ         R9, CX
	SUBQ         BX, CX
	JZ           sbnomask
	TAILMASK
sbnomask:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    dottail
dotloop:
	VMOVUPS     (SI)(AX*4), Y2
	VFMADD231PS (DI)(AX*4), Y2, Y0
	SWAPACC(Y0, Y1, Y9)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JB          dotloop
dottail:
	CMPQ        BX, R9
	JE          dotdone
	VMASKMOVPS  (SI)(BX*4), Y15, Y2
	VMASKMOVPS  (DI)(BX*4), Y15, Y3
	VFMADD231PS Y3, Y2, Y0
dotdone:
	VADDPS Y1, Y0, Y0
	HSUM
	VBROADCASTSS X0, Y11

	XORQ AX, AX
	CMPQ AX, BX
	JAE  gradtail
gradloop:
	VMOVUPS (DI)(AX*4), Y2
	VSUBPS  Y11, Y2, Y2
	VMULPS  (SI)(AX*4), Y2, Y2
	VMULPS  Y12, Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      gradloop
gradtail:
	CMPQ       BX, R9
	JE         graddone
	VMASKMOVPS (DI)(BX*4), Y15, Y2
	VMASKMOVPS (SI)(BX*4), Y15, Y3
	VSUBPS     Y11, Y2, Y2
	VMULPS     Y3, Y2, Y2
	VMULPS     Y12, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)(BX*4)
graddone:
	VZEROUPPER
	RET

// SWIGLU computes Y2 = silu(g)·u = g/(1+e^−g)·u from g in Y2 and u in Y5; Y12 = 1;
// Y3, Y4, Y6, Y7 scratch.
#define SWIGLU \
	VXORPS Y3, Y3, Y3 \
	; VSUBPS Y2, Y3, Y6 \
	; EXP(Y6, Y3, Y4, Y7) \
	; VADDPS Y12, Y6, Y6 \
	; VDIVPS Y6, Y2, Y2 \
	; VMULPS Y5, Y2, Y2

// func swigluForward32AVX2(out, gate, u *float32, n int)
TEXT ·swigluForward32AVX2(SB), NOSPLIT, $0-32
	MOVQ    out+0(FP), DI
	MOVQ    gate+8(FP), SI
	MOVQ    u+16(FP), DX
	MOVQ    n+24(FP), R9
	EXPCONST
	VMOVUPS ONE, Y12
	MOVQ    R9, BX
	ANDQ    $~7, BX
	XORQ    AX, AX
	CMPQ    AX, BX
	JAE     swftail
swfloop:
	VMOVUPS (SI)(AX*4), Y2
	VMOVUPS (DX)(AX*4), Y5
	SWIGLU
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      swfloop
swftail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   swfdone
	TAILMASK
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VMASKMOVPS (DX)(BX*4), Y15, Y5
	SWIGLU
	VMASKMOVPS Y2, Y15, (DI)(BX*4)
swfdone:
	VZEROUPPER
	RET

// SWIGLUBWD computes, from g (Y2), u (Y5) and dout (Y7): du = dout·g·s (Y8) and
// dg = dout·u·s·(1 + g·(1−s)) (Y6), where s = 1/(1+e^−g). Y12 = 1; Y3, Y4, Y9 scratch.
#define SWIGLUBWD \
	VXORPS Y3, Y3, Y3 \
	; VSUBPS Y2, Y3, Y6 \
	; EXP(Y6, Y3, Y4, Y9) \
	; VADDPS Y12, Y6, Y6 \
	; VDIVPS Y6, Y12, Y6 \
	; VMULPS Y2, Y6, Y8 \
	; VMULPS Y7, Y8, Y8 \
	; VSUBPS Y6, Y12, Y3 \
	; VFMADD213PS Y12, Y2, Y3 \
	; VMULPS Y6, Y3, Y3 \
	; VMULPS Y5, Y3, Y3 \
	; VMULPS Y7, Y3, Y6

// func swigluBackward32AVX2(dg, du, dout, gate, u *float32, n int)
TEXT ·swigluBackward32AVX2(SB), NOSPLIT, $0-48
	MOVQ    dg+0(FP), DI
	MOVQ    du+8(FP), R10
	MOVQ    dout+16(FP), R11
	MOVQ    gate+24(FP), SI
	MOVQ    u+32(FP), DX
	MOVQ    n+40(FP), R9
	EXPCONST
	VMOVUPS ONE, Y12
	MOVQ    R9, BX
	ANDQ    $~7, BX
	XORQ    AX, AX
	CMPQ    AX, BX
	JAE     swbtail
swbloop:
	VMOVUPS (SI)(AX*4), Y2
	VMOVUPS (DX)(AX*4), Y5
	VMOVUPS (R11)(AX*4), Y7
	SWIGLUBWD
	VMOVUPS Y6, (DI)(AX*4)
	VMOVUPS Y8, (R10)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      swbloop
swbtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   swbdone
	TAILMASK
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VMASKMOVPS (DX)(BX*4), Y15, Y5
	VMASKMOVPS (R11)(BX*4), Y15, Y7
	SWIGLUBWD
	VMASKMOVPS Y6, Y15, (DI)(BX*4)
	VMASKMOVPS Y8, Y15, (R10)(BX*4)
swbdone:
	VZEROUPPER
	RET

// func sumSquares32AVX2(x *float32, n int) float32
TEXT ·sumSquares32AVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), R9
	MOVQ   R9, BX
	ANDQ   $~7, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    sstail
ssloop:
	VMOVUPS     (SI)(AX*4), Y2
	VFMADD231PS Y2, Y2, Y0
	SWAPACC(Y0, Y1, Y9)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JB          ssloop
sstail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   ssdone
	TAILMASK
	VMASKMOVPS  (SI)(BX*4), Y15, Y2
	VFMADD231PS Y2, Y2, Y0
ssdone:
	VADDPS Y1, Y0, Y0
	HSUM
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleMul32AVX2(out, x, w *float32, n int, s float32)
// out = x·s·w.
TEXT ·scaleMul32AVX2(SB), NOSPLIT, $0-36
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), R9
	VBROADCASTSS s+32(FP), Y12
	MOVQ         R9, BX
	ANDQ         $~7, BX
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          smtail
smloop:
	VMULPS  (SI)(AX*4), Y12, Y2
	VMULPS  (DX)(AX*4), Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      smloop
smtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   smdone
	TAILMASK
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VMASKMOVPS (DX)(BX*4), Y15, Y3
	VMULPS     Y12, Y2, Y2
	VMULPS     Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)(BX*4)
smdone:
	VZEROUPPER
	RET

// func rmsnormBackward32AVX2(dx, dwPart, dout, x, w *float32, n int, rs, invC float32)
// x̂ = x·rs; dwPart += dout·x̂; dot = Σ dout·w·x̂ · invC; dx += rs·(dout·w − x̂·dot).
TEXT ·rmsnormBackward32AVX2(SB), NOSPLIT, $0-56
	MOVQ         dx+0(FP), DI
	MOVQ         dwPart+8(FP), R10
	MOVQ         dout+16(FP), R11
	MOVQ         x+24(FP), SI
	MOVQ         w+32(FP), DX
	MOVQ         n+40(FP), R9
	VBROADCASTSS rs+48(FP), Y12
	MOVQ         R9, BX
	ANDQ         $~7, BX
	MOVQ         R9, CX
	SUBQ         BX, CX
	JZ           rbnomask
	TAILMASK
rbnomask:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX
	CMPQ   AX, BX
	JAE    rb1tail
rb1loop:
	VMULPS      (SI)(AX*4), Y12, Y2 // x̂
	VMOVUPS     (R11)(AX*4), Y3     // dout
	VMOVUPS     (R10)(AX*4), Y4
	VFMADD231PS Y3, Y2, Y4
	VMOVUPS     Y4, (R10)(AX*4)
	VMULPS      (DX)(AX*4), Y3, Y3  // dout·w
	VFMADD231PS Y3, Y2, Y0
	SWAPACC(Y0, Y1, Y9)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JB          rb1loop
rb1tail:
	CMPQ        R9, BX
	JE          rb1done
	VMASKMOVPS  (SI)(BX*4), Y15, Y2
	VMULPS      Y12, Y2, Y2
	VMASKMOVPS  (R11)(BX*4), Y15, Y3
	VMASKMOVPS  (R10)(BX*4), Y15, Y4
	VFMADD231PS Y3, Y2, Y4
	VMASKMOVPS  Y4, Y15, (R10)(BX*4)
	VMASKMOVPS  (DX)(BX*4), Y15, Y5
	VMULPS      Y5, Y3, Y3
	VFMADD231PS Y3, Y2, Y0
rb1done:
	VADDPS Y1, Y0, Y0
	HSUM
	VMULSS       invC+52(FP), X0, X0
	VBROADCASTSS X0, Y11

	XORQ AX, AX
	CMPQ AX, BX
	JAE  rb2tail
rb2loop:
	VMULPS       (SI)(AX*4), Y12, Y2 // x̂
	VMOVUPS      (R11)(AX*4), Y3
	VMULPS       (DX)(AX*4), Y3, Y3  // dout·w
	VFNMADD231PS Y11, Y2, Y3         // dout·w − x̂·dot
	VMOVUPS      (DI)(AX*4), Y4
	VFMADD231PS  Y12, Y3, Y4
	VMOVUPS      Y4, (DI)(AX*4)
	ADDQ         $8, AX
	CMPQ         AX, BX
	JB           rb2loop
rb2tail:
	CMPQ         R9, BX
	JE           rb2done
	VMASKMOVPS   (SI)(BX*4), Y15, Y2
	VMULPS       Y12, Y2, Y2
	VMASKMOVPS   (R11)(BX*4), Y15, Y3
	VMASKMOVPS   (DX)(BX*4), Y15, Y5
	VMULPS       Y5, Y3, Y3
	VFNMADD231PS Y11, Y2, Y3
	VMASKMOVPS   (DI)(BX*4), Y15, Y4
	VFMADD231PS  Y12, Y3, Y4
	VMASKMOVPS   Y4, Y15, (DI)(BX*4)
rb2done:
	VZEROUPPER
	RET

// ROTATE rotates the pairs (Y2, Y3) by (cos, sin) = (Y4, Y5) into (Y6, Y7).
#define ROTATE \
	VMULPS Y4, Y2, Y6 \
	; VFNMADD231PS Y5, Y3, Y6 \
	; VMULPS Y5, Y2, Y7 \
	; VFMADD231PS Y4, Y3, Y7

// func rope32AVX2(x, cos, sin *float32, heads, d int)
// For each of the heads consecutive vectors of d elements (d even), with h = d/2:
// (x[i], x[i+h]) = (x[i]·cos[i] − x[i+h]·sin[i], x[i]·sin[i] + x[i+h]·cos[i]) for i < h.
TEXT ·rope32AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ cos+8(FP), R10
	MOVQ sin+16(FP), R11
	MOVQ heads+24(FP), R12
	MOVQ d+32(FP), R13
	MOVQ R13, R9
	SHRQ $1, R9  // h
	MOVQ R9, BX
	ANDQ $~7, BX
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
	VMOVUPS (DI)(AX*4), Y2
	VMOVUPS (SI)(AX*4), Y3
	VMOVUPS (R10)(AX*4), Y4
	VMOVUPS (R11)(AX*4), Y5
	ROTATE
	VMOVUPS Y6, (DI)(AX*4)
	VMOVUPS Y7, (SI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      ropeloop
ropetail:
	CMPQ       BX, R9
	JE         ropenext
	VMASKMOVPS (DI)(BX*4), Y15, Y2
	VMASKMOVPS (SI)(BX*4), Y15, Y3
	VMASKMOVPS (R10)(BX*4), Y15, Y4
	VMASKMOVPS (R11)(BX*4), Y15, Y5
	ROTATE
	VMASKMOVPS Y6, Y15, (DI)(BX*4)
	VMASKMOVPS Y7, Y15, (SI)(BX*4)
ropenext:
	LEAQ (DI)(R13*4), DI
	DECQ R12
	JMP  ropeheads
ropedone:
	VZEROUPPER
	RET

// func scale32AVX2(x *float32, n int, s float32)
TEXT ·scale32AVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), R9
	VBROADCASTSS s+16(FP), Y12
	MOVQ         R9, BX
	ANDQ         $~7, BX
	XORQ         AX, AX
	CMPQ         AX, BX
	JAE          sctail
scloop:
	VMULPS  (SI)(AX*4), Y12, Y2
	VMOVUPS Y2, (SI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      scloop
sctail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   scdone
	TAILMASK
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	VMULPS     Y12, Y2, Y2
	VMASKMOVPS Y2, Y15, (SI)(BX*4)
scdone:
	VZEROUPPER
	RET

// MM4FMA adds, for the 16 columns of B in Y8 and Y9, the products with four rows of A
// (AX, AX + rsA, AX + 2·rsA, AX + 3·rsA) to the accumulators Y0–Y7. Y10, Y11 scratch.
#define MM4FMA \
	VBROADCASTSS (AX), Y10 \
	; VBROADCASTSS (AX)(R9*1), Y11 \
	; VFMADD231PS Y8, Y10, Y0 \
	; VFMADD231PS Y9, Y10, Y1 \
	; VFMADD231PS Y8, Y11, Y2 \
	; VFMADD231PS Y9, Y11, Y3 \
	; VBROADCASTSS (AX)(R9*2), Y10 \
	; VBROADCASTSS (AX)(R12*1), Y11 \
	; VFMADD231PS Y8, Y10, Y4 \
	; VFMADD231PS Y9, Y10, Y5 \
	; VFMADD231PS Y8, Y11, Y6 \
	; VFMADD231PS Y9, Y11, Y7

// STORE2 scales the two accumulators of a row by alpha (Y15), stores them at BX, and moves
// BX to the next row of C (R8 bytes on); MSTORE2 stores under the masks Y13 and Y14.
#define STORE2(A, B) \
	VMULPS Y15, A, A \
	; VMULPS Y15, B, B \
	; VMOVUPS A, (BX) \
	; VMOVUPS B, 32(BX) \
	; ADDQ R8, BX

#define MSTORE2(A, B) \
	VMULPS Y15, A, A \
	; VMULPS Y15, B, B \
	; VMASKMOVPS A, Y13, (BX) \
	; VMASKMOVPS B, Y14, 32(BX) \
	; ADDQ R8, BX

// MMMASKS sets Y13 and Y14 to the lanes of a 16-column chunk of which CX (1 ≤ CX ≤ 15)
// columns are left: Y13 covers the first 8, Y14 the next 8. Clobbers AX and BX.
#define MMMASKS \
	LEAQ avx2tail<>(SB), AX \
	; MOVQ CX, BX \
	; NEGQ BX \
	; VMOVDQU 64(AX)(BX*4), Y14 \
	; MOVQ $8, BX \
	; CMPQ CX, BX \
	; CMOVQLT CX, BX \
	; NEGQ BX \
	; VMOVDQU 32(AX)(BX*4), Y13

#define ZERO8 \
	VXORPS Y0, Y0, Y0 \
	; VXORPS Y1, Y1, Y1 \
	; VXORPS Y2, Y2, Y2 \
	; VXORPS Y3, Y3, Y3 \
	; VXORPS Y4, Y4, Y4 \
	; VXORPS Y5, Y5, Y5 \
	; VXORPS Y6, Y6, Y6 \
	; VXORPS Y7, Y7, Y7

// func matmul32AVX2(c *float32, ldc int, a *float32, rsA, csA int, b *float32, ldb int, m, n, k int, alpha float32)
// C = alpha·A·B for C m×n (row stride ldc), A m×k with element (i, p) at a[i·rsA + p·csA]
// (so A or Aᵀ of a row-major matrix), B k×n row-major (row stride ldb). Each element of C
// is one chain of fused multiply-adds in increasing p, as in matmul32. Rows go in groups
// of 4 (8 accumulators), then one at a time; columns in chunks of 16, the last one masked.
TEXT ·matmul32AVX2(SB), NOSPLIT, $0-84
	MOVQ         c+0(FP), DI
	MOVQ         ldc+8(FP), R8
	SHLQ         $2, R8
	MOVQ         a+16(FP), SI
	MOVQ         rsA+24(FP), R9
	SHLQ         $2, R9
	MOVQ         csA+32(FP), R10
	SHLQ         $2, R10
	MOVQ         b+40(FP), DX
	MOVQ         ldb+48(FP), R11
	SHLQ         $2, R11
	LEAQ         (R9)(R9*2), R12 // 3 rows of A
	VBROADCASTSS alpha+80(FP), Y15

mmrows4:
	CMPQ m+56(FP), $4
	JLT  mmrows1
	XORQ R13, R13 // column
mmchunk4:
	MOVQ n+64(FP), CX
	SUBQ R13, CX
	JLE  mmnext4
	CMPQ CX, $16
	JLT  mmmask4
	ZERO8
	MOVQ  SI, AX
	LEAQ  (DX)(R13*4), BX
	MOVQ  k+72(FP), CX
	TESTQ CX, CX
	JZ    mmstore4
mmloop4:
	VMOVUPS (BX), Y8
	VMOVUPS 32(BX), Y9
	MM4FMA
	ADDQ    R10, AX
	ADDQ    R11, BX
	DECQ    CX
	JNZ     mmloop4
mmstore4:
	LEAQ (DI)(R13*4), BX
	STORE2(Y0, Y1)
	STORE2(Y2, Y3)
	STORE2(Y4, Y5)
	STORE2(Y6, Y7)
	ADDQ $16, R13
	JMP  mmchunk4
mmmask4:
	MMMASKS
	ZERO8
	MOVQ  SI, AX
	LEAQ  (DX)(R13*4), BX
	MOVQ  k+72(FP), CX
	TESTQ CX, CX
	JZ    mmmstore4
mmmloop4:
	VMASKMOVPS (BX), Y13, Y8
	VMASKMOVPS 32(BX), Y14, Y9
	MM4FMA
	ADDQ       R10, AX
	ADDQ       R11, BX
	DECQ       CX
	JNZ        mmmloop4
mmmstore4:
	LEAQ (DI)(R13*4), BX
	MSTORE2(Y0, Y1)
	MSTORE2(Y2, Y3)
	MSTORE2(Y4, Y5)
	MSTORE2(Y6, Y7)
	ADDQ $16, R13
	JMP  mmchunk4
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
	MOVQ n+64(FP), CX
	SUBQ R13, CX
	JLE  mmnext1
	CMPQ CX, $16
	JLT  mmmask1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmstore1
mmloop1:
	VBROADCASTSS (AX), Y10
	VFMADD231PS  (BX), Y10, Y0
	VFMADD231PS  32(BX), Y10, Y1
	ADDQ         R10, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmloop1
mmstore1:
	LEAQ (DI)(R13*4), BX
	STORE2(Y0, Y1)
	ADDQ $16, R13
	JMP  mmchunk1
mmmask1:
	MMMASKS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   SI, AX
	LEAQ   (DX)(R13*4), BX
	MOVQ   k+72(FP), CX
	TESTQ  CX, CX
	JZ     mmmstore1
mmmloop1:
	VMASKMOVPS   (BX), Y13, Y8
	VMASKMOVPS   32(BX), Y14, Y9
	VBROADCASTSS (AX), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	ADDQ         R10, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          mmmloop1
mmmstore1:
	LEAQ (DI)(R13*4), BX
	MSTORE2(Y0, Y1)
	ADDQ $16, R13
	JMP  mmchunk1
mmnext1:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ m+56(FP)
	JMP  mmrows1
mmdone:
	VZEROUPPER
	RET

// func transpose32AVX2(dst, src *float32, rows, cols, lds int)
// dst[j·rows + i] = src[i·lds + j] for i < rows, j < cols: column j of src, gathered 8
// rows at a time, becomes row j of dst.
TEXT ·transpose32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R9
	MOVQ cols+24(FP), R10
	MOVQ lds+32(FP), R11
	// Y1 = (0, 1, …, 7)·lds as int32 lane offsets
	MOVQ         $0x0706050403020100, AX
	VMOVQ        AX, X1
	VPMOVZXBD    X1, Y1
	VMOVQ        R11, X4
	VPBROADCASTD X4, Y4
	VPMULLD      Y4, Y1, Y1
	MOVQ         R11, R12
	SHLQ         $5, R12    // 8 rows of src, in bytes
	MOVQ         R9, BX
	ANDQ         $~7, BX    // rows in whole groups of 8
	MOVQ         R9, CX
	SUBQ         BX, CX
	JZ           trnomask
	TAILMASK                // mask of the last group
trnomask:
	XORQ DX, DX // column j
trcol:
	CMPQ DX, R10
	JGE  trdone
	LEAQ (SI)(DX*4), R8 // &src[0, j]
	XORQ AX, AX         // row i
trrow:
	CMPQ       AX, BX
	JGE        trtail
	VPCMPEQD   Y2, Y2, Y2
	VGATHERDPS Y2, (R8)(Y1*4), Y0
	VMOVUPS    Y0, (DI)(AX*4)
	ADDQ       R12, R8
	ADDQ       $8, AX
	JMP        trrow
trtail:
	CMPQ       AX, R9
	JGE        trnext
	VMOVDQU    Y15, Y2
	VXORPS     Y0, Y0, Y0
	VGATHERDPS Y2, (R8)(Y1*4), Y0
	VMASKMOVPS Y0, Y15, (DI)(AX*4)
trnext:
	LEAQ (DI)(R9*4), DI
	INCQ DX
	JMP  trcol
trdone:
	VZEROUPPER
	RET

// PHI computes Φ(x) = ½(1 + erf(x/√2)) into Y6 and e^(−x²/2) into Y7 from x in Y2, as the
// PHI of kernels_gelu_amd64.s (Abramowitz & Stegun 7.1.26); Y3, Y4, Y5, Y8 scratch.
#define PHI \
	VMULPS Y2, Y2, Y7 \
	; VMULPS HALF, Y7, Y7 \
	; VXORPS Y3, Y3, Y3 \
	; VSUBPS Y7, Y3, Y7 \
	; EXP(Y7, Y3, Y4, Y8) \
	; VANDPS ABSMASK, Y2, Y5 \
	; VMULPS INVSQRT2, Y5, Y5 \
	; VMOVUPS ONE, Y4 \
	; VFMADD132PS ERFP, Y4, Y5 \
	; VDIVPS Y5, Y4, Y5 \
	; VMOVUPS ERFA5, Y6 \
	; VFMADD213PS ERFA4, Y5, Y6 \
	; VFMADD213PS ERFA3, Y5, Y6 \
	; VFMADD213PS ERFA2, Y5, Y6 \
	; VFMADD213PS ERFA1, Y5, Y6 \
	; VMULPS Y5, Y6, Y6 \
	; VMULPS Y7, Y6, Y6 \
	; VMOVUPS HALF, Y3 \
	; VFNMADD213PS Y3, Y3, Y6 \
	; VANDPS SIGNMASK, Y2, Y4 \
	; VORPS Y4, Y6, Y6 \
	; VADDPS Y3, Y6, Y6

// func geluForward32AVX2(out, x *float32, n int)
TEXT ·geluForward32AVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), R9
	EXPCONST
	MOVQ R9, BX
	ANDQ $~7, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  gftail
gfloop:
	VMOVUPS (SI)(AX*4), Y2
	PHI
	VMULPS  Y2, Y6, Y6
	VMOVUPS Y6, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      gfloop
gftail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   gfdone
	TAILMASK
	VMASKMOVPS (SI)(BX*4), Y15, Y2
	PHI
	VMULPS     Y2, Y6, Y6
	VMASKMOVPS Y6, Y15, (DI)(BX*4)
gfdone:
	VZEROUPPER
	RET

// func geluBackward32AVX2(dx, dout, x *float32, n int)
// dx = dout·(Φ(x) + x·e^(−x²/2)/√(2π)), overwritten.
TEXT ·geluBackward32AVX2(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), R9
	EXPCONST
	MOVQ R9, BX
	ANDQ $~7, BX
	XORQ AX, AX
	CMPQ AX, BX
	JAE  gbtail
gbloop:
	VMOVUPS     (SI)(AX*4), Y2
	VMOVUPS     (DX)(AX*4), Y9
	PHI
	VMULPS      Y7, Y2, Y8
	VFMADD231PS INVSQRT2PI, Y8, Y6
	VMULPS      Y9, Y6, Y6
	VMOVUPS     Y6, (DI)(AX*4)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JB          gbloop
gbtail:
	MOVQ R9, CX
	SUBQ BX, CX
	JZ   gbdone
	TAILMASK
	VMASKMOVPS  (SI)(BX*4), Y15, Y2
	VMASKMOVPS  (DX)(BX*4), Y15, Y9
	PHI
	VMULPS      Y7, Y2, Y8
	VFMADD231PS INVSQRT2PI, Y8, Y6
	VMULPS      Y9, Y6, Y6
	VMASKMOVPS  Y6, Y15, (DI)(BX*4)
gbdone:
	VZEROUPPER
	RET
