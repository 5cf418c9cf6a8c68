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

// ProvenanceOf is the provenance of an engine of the named backend in this binary: its
// arithmetic is the catalog's, which no setting of the process changes.
func ProvenanceOf(name string) Provenance {
	b, _ := Lookup(name)
	return Provenance{Backend: b.Name, Precision: b.Precision, Arithmetic: b.Arithmetic, Code: CodeVersion()}
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
