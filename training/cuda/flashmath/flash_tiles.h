// The index maths of the flash attention kernels (training/cuda/flash.cu), compiled by
// nvcc into the kernels and by cgo's C compiler into package flashmath (this folder, so
// that Go's build cache sees the header change), whose tests check every function here
// against naive loops and against the PTX ISA's tables.
//
// Tiles: a block of FLASH_WARPS warps works on FLASH_BR query rows (16 per warp) and steps
// over tiles of FLASH_BC keys, head size FLASH_D, operands in shared memory with rows of
// FLASH_LD bfloat16 elements (the padding keeps ldmatrix's eight row addresses on distinct
// banks).
//
// Fragments of mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"): in a warp, lane l has
// group g = l/4 and thread-in-group q = l%4; A (16x16) is 8 bfloat16 in 4 registers, B
// (16x8) 4 bfloat16 in 2, C and D (16x8) 4 floats.
#ifndef SFSWEEP_FLASH_TILES_H
#define SFSWEEP_FLASH_TILES_H

#ifdef __CUDACC__
#define FLASH_FN static __host__ __device__ __forceinline__
#else
#define FLASH_FN static inline
#endif

#define FLASH_D 64
#define FLASH_WARPS 4
#define FLASH_BR (16 * FLASH_WARPS)
#define FLASH_BC 64
#define FLASH_PAD 8
#define FLASH_LD (FLASH_D + FLASH_PAD)

// flash_a_row and flash_a_col: the row and column in A of element i (0..7) of lane's
// A fragment; elements 2r and 2r+1 share register r.
FLASH_FN int flash_a_row(int lane, int i) { return (lane >> 2) + 8 * ((i >> 1) & 1); }
FLASH_FN int flash_a_col(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 2); }

// flash_b_row (k) and flash_b_col (n): element i (0..3) of lane's B fragment.
FLASH_FN int flash_b_row(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 1); }
FLASH_FN int flash_b_col(int lane, int i) { (void)i; return lane >> 2; }

// flash_c_row and flash_c_col: element i (0..3) of lane's C (and D) fragment.
FLASH_FN int flash_c_row(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
FLASH_FN int flash_c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }

// flash_c_to_a: a 16x16 block held as two C fragments (columns 0-7 in tile 0, 8-15 in
// tile 1) is, element for element, an A fragment: element i of the A fragment is element
// flash_c_to_a_elem(i) of C tile flash_c_to_a_tile(i). So a product's scores become the
// next product's operand without leaving the registers.
FLASH_FN int flash_c_to_a_tile(int i) { return i >> 2; }
FLASH_FN int flash_c_to_a_elem(int i) { return i & 3; }

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 loads four 8x8 matrices; lane l gives the
// address of row l%8 of matrix l/8 and receives, in register j, row l/4 and columns
// 2(l%4), 2(l%4)+1 of matrix j (with .trans, of matrix j transposed). The functions below
// say which row and column of a tile in shared memory lane's address points at.

// flash_ldsm_a_row and _col: A (16x16 at rows r0.., cols c0..) stored row-major: the four
// registers are the A fragment.
FLASH_FN int flash_ldsm_a_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
FLASH_FN int flash_ldsm_a_col(int lane) { return 8 * (lane >> 4); }

// flash_ldsm_bt_row and _col: two B fragments (k16 x n16: n 0-7, then 8-15) from Bᵀ stored
// row-major, a row per n (keys, when B = Kᵀ): registers 0,1 are the first B fragment,
// 2,3 the second.
FLASH_FN int flash_ldsm_bt_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
FLASH_FN int flash_ldsm_bt_col(int lane) { return 8 * ((lane >> 3) & 1); }

// flash_ldsm_b_row and _col: the same two B fragments with .trans from B stored row-major,
// a row per k (keys, when B = V).
FLASH_FN int flash_ldsm_b_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
FLASH_FN int flash_ldsm_b_col(int lane) { return 8 * (lane >> 4); }

// flash_tiles is the number of tiles of size bs that cover t.
FLASH_FN int flash_tiles(int t, int bs) { return (t + bs - 1) / bs; }

// flash_visible says whether query i may attend to key j in a sequence of t: causal, and
// both inside it.
FLASH_FN int flash_visible(int i, int j, int t) { return j <= i && i < t && j < t; }

// flash_kv_end is the number of key tiles (of bc) query tile qt (of br) visits, from key
// tile 0: those holding a key some query of the tile sees.
FLASH_FN int flash_kv_end(int qt, int br, int bc, int t) {
    int last = (qt + 1) * br < t ? (qt + 1) * br : t; // one past the tile's last query
    return (last - 1) / bc + 1;
}

// flash_q_begin is the first query tile (of br) that sees a key of key tile kt (of bc);
// it visits every later query tile up to flash_tiles(t, br).
FLASH_FN int flash_q_begin(int kt, int br, int bc) { return kt * bc / br; }

// flash_tile_masked says whether tile (qt, kt) holds a pair that flash_visible rejects:
// only those tiles pay for the mask.
FLASH_FN int flash_tile_masked(int qt, int kt, int br, int bc, int t) {
    return (kt + 1) * bc - 1 > qt * br || (kt + 1) * bc > t || (qt + 1) * br > t;
}

#endif
