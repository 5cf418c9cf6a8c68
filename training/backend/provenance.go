package backend

import (
	"runtime/debug"
	"sync"
)

// Provenance records the engine that produced a result or a checkpoint: its backend,
// precision, arithmetic (Info.Arithmetic) and the version of the code.
type Provenance struct {
	Backend    string    `json:"backend"`
	Precision  Precision `json:"precision"`
	Arithmetic string    `json:"arithmetic"`
	Code       string    `json:"code"`
}

// ProvenanceOf is the provenance of an engine of the named backend in this binary and
// process: its arithmetic is the catalog's with the variant the backend registered
// (RegisterVariant) appended, so that results and checkpoints of a path not yet signed
// off never pass for the catalog arithmetic's.
func ProvenanceOf(name string) Provenance {
	b, _ := Lookup(name)
	variantMu.Lock()
	v := variants[name]
	variantMu.Unlock()
	arith := b.Arithmetic
	if v != nil {
		arith += v()
	}
	return Provenance{Backend: b.Name, Precision: b.Precision, Arithmetic: arith, Code: CodeVersion()}
}

// A VariantFunc returns what an engine of its backend computes in this process beyond
// the catalog's arithmetic, as a suffix ("+flash"), or "" when it computes that.
type VariantFunc func() string

var (
	variantMu sync.Mutex
	variants  = map[string]VariantFunc{}
)

// RegisterVariant registers the variant of the named backend's arithmetic, for a backend
// whose engines can be switched onto paths that change its bits (a GPU engine's fast
// paths before a GPU run signs them off).
func RegisterVariant(name string, f VariantFunc) {
	variantMu.Lock()
	defer variantMu.Unlock()
	if _, ok := Lookup(name); !ok {
		panic("backend: " + name + " is not in the catalog (training/backend/registry.go)")
	}
	if _, dup := variants[name]; dup {
		panic("backend: the variant of " + name + " registered twice")
	}
	variants[name] = f
}

// CodeVersion is the version of the running binary's code: its module version, or the
// VCS revision it was built from ("-dirty" when the tree had changes), or "devel".
var CodeVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	switch {
	case rev != "":
		return rev + dirty
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "devel"
})
