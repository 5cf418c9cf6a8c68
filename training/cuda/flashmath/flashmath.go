package flashmath

// #include "flash_tiles.h"
import "C"

// The tile sizes of the kernels (FLASH_D, FLASH_WARPS, FLASH_BR, FLASH_BC, FLASH_LD).
const (
	D     = C.FLASH_D
	Warps = C.FLASH_WARPS
	BR    = C.FLASH_BR
	BC    = C.FLASH_BC
	LD    = C.FLASH_LD
)

// ARow and ACol are the row and column of element i of lane's A fragment.
func ARow(lane, i int) int { return int(C.flash_a_row(C.int(lane), C.int(i))) }

// ACol: see ARow.
func ACol(lane, i int) int { return int(C.flash_a_col(C.int(lane), C.int(i))) }

// BRow and BCol are the row (k) and column (n) of element i of lane's B fragment.
func BRow(lane, i int) int { return int(C.flash_b_row(C.int(lane), C.int(i))) }

// BCol: see BRow.
func BCol(lane, i int) int { return int(C.flash_b_col(C.int(lane), C.int(i))) }

// CRow and CCol are the row and column of element i of lane's C fragment.
func CRow(lane, i int) int { return int(C.flash_c_row(C.int(lane), C.int(i))) }

// CCol: see CRow.
func CCol(lane, i int) int { return int(C.flash_c_col(C.int(lane), C.int(i))) }

// CToA says which C tile and element hold element i of the A fragment that two C tiles
// make.
func CToA(i int) (tile, elem int) {
	return int(C.flash_c_to_a_tile(C.int(i))), int(C.flash_c_to_a_elem(C.int(i)))
}

// LdsmA is the row and column lane's ldmatrix address points at for an A fragment.
func LdsmA(lane int) (row, col int) {
	return int(C.flash_ldsm_a_row(C.int(lane))), int(C.flash_ldsm_a_col(C.int(lane)))
}

// LdsmBT is that for two B fragments from Bᵀ stored a row per n (no transpose).
func LdsmBT(lane int) (row, col int) {
	return int(C.flash_ldsm_bt_row(C.int(lane))), int(C.flash_ldsm_bt_col(C.int(lane)))
}

// LdsmB is that for two B fragments from B stored a row per k (with .trans).
func LdsmB(lane int) (row, col int) {
	return int(C.flash_ldsm_b_row(C.int(lane))), int(C.flash_ldsm_b_col(C.int(lane)))
}

// Tiles is the number of tiles of bs covering t.
func Tiles(t, bs int) int { return int(C.flash_tiles(C.int(t), C.int(bs))) }

// Visible says whether query i sees key j in a sequence of t.
func Visible(i, j, t int) bool { return C.flash_visible(C.int(i), C.int(j), C.int(t)) != 0 }

// KVEnd is the number of key tiles query tile qt visits.
func KVEnd(qt, br, bc, t int) int {
	return int(C.flash_kv_end(C.int(qt), C.int(br), C.int(bc), C.int(t)))
}

// QBegin is the first query tile that sees a key of key tile kt.
func QBegin(kt, br, bc int) int { return int(C.flash_q_begin(C.int(kt), C.int(br), C.int(bc))) }

// TileMasked says whether tile (qt, kt) holds a pair Visible rejects.
func TileMasked(qt, kt, br, bc, t int) bool {
	return C.flash_tile_masked(C.int(qt), C.int(kt), C.int(br), C.int(bc), C.int(t)) != 0
}
