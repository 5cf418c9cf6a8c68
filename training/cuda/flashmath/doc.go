// Package flashmath is the flash attention kernels' index maths (the C header
// flash_tiles.h, which the kernels of flash.cu include) called from Go through
// cgo, so that ordinary tests check the header against naive loops on a machine without a
// GPU. Nothing imports it: the CPU engine stays free of cgo, and without cgo the package
// is this file alone.
package flashmath
