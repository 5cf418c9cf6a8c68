package backend

import (
	"sync"

	"github.com/sfsweep/sfsweep/training/model"
)

// NeedFunc returns the device memory, in bytes, that an engine made for cfg on
// micro-batches of batch sequences of seqLen tokens allocates, with its optimizer's state:
// what a trial of that shape holds on its device while it trains.
type NeedFunc func(cfg model.Config, batch, seqLen int) int64

var (
	needMu sync.Mutex
	needs  = map[string]NeedFunc{}
)

// RegisterNeed tells, for a backend of the catalog whose engine holds device memory, how
// much a trial needs, so that a worker admits trials to a device by memory before their
// engines allocate. A backend registers it beside its Factory; one that registers none
// (the cpu engine, in host memory) is not admitted. Registering a name twice, or one the
// catalog does not list, panics.
func RegisterNeed(name string, f NeedFunc) {
	needMu.Lock()
	defer needMu.Unlock()
	if _, ok := Lookup(name); !ok {
		panic("backend: " + name + " is not in the catalog (training/backend/registry.go)")
	}
	if _, dup := needs[name]; dup {
		panic("backend: the need of " + name + " registered twice")
	}
	needs[name] = f
}

// Need returns the device memory a trial of the named backend needs for cfg, batch and
// seqLen (as NeedFunc), and false when the backend registered no need.
func Need(name string, cfg model.Config, batch, seqLen int) (int64, bool) {
	needMu.Lock()
	f, ok := needs[name]
	needMu.Unlock()
	if !ok {
		return 0, false
	}
	return f(cfg, batch, seqLen), true
}
