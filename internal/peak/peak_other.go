//go:build !amd64 || purego

package peak

// loops lists no loop: there is no assembly here.
func loops() []loop { return nil }
