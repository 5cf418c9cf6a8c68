// Package fielderr is the one error of a bad setting: which field, its value, why it is
// refused and, in a manifest, on which line.
//
// Every layer that validates input returns it, from the optimizer's hyperparameters to a
// sweep manifest's fields, so that callers test for one type with errors.As and a layer
// that nests another's settings names the path with Under instead of translating types.
package fielderr

import (
	"errors"
	"fmt"
)

// Error is a field refused: its path (as the user wrote it: "optimizer.lr",
// "optimizers[0].betas[1]"), its value, the reason and, where known, the line of the
// manifest it stands on (0 if unknown).
// A field the input must give and does not is Missing: its Value is then not shown.
type Error struct {
	Field   string
	Value   any
	Reason  string
	Line    int
	Missing bool
}

func (e *Error) Error() string {
	what := fmt.Sprintf("%s = %v", e.Field, e.Value)
	if e.Missing {
		what = e.Field + " is missing"
	}
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, what, e.Reason)
	}
	return what + ": " + e.Reason
}

// Under returns err with its field placed under prefix ("optimizer" and "lr" give
// "optimizer.lr"), for a layer whose settings nest another's. An err that holds no *Error
// is returned as it is; one that holds one is replaced by the *Error alone (its wrapping
// named the inner layer, which the path now does).
func Under(prefix string, err error) error {
	var fe *Error
	if !errors.As(err, &fe) {
		return err
	}
	out := *fe
	out.Field = prefix + "." + fe.Field
	return &out
}
