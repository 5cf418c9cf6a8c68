package fielderr

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Field: "lr", Value: -1.0, Reason: "must be > 0"}, "lr = -1: must be > 0"},
		{&Error{Field: "optimizers[0].lr", Value: 0, Reason: "must be > 0", Line: 7}, "line 7: optimizers[0].lr = 0: must be > 0"},
		{&Error{Field: "seeds", Value: "[]", Reason: "must list at least one seed", Missing: true}, "seeds is missing: must list at least one seed"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestUnder(t *testing.T) {
	inner := fmt.Errorf("sfadamw: %w", &Error{Field: "beta1", Value: 1.0, Reason: "must be in [0, 1)"})
	err := Under("optimizer", inner)
	var fe *Error
	if !errors.As(err, &fe) || fe.Field != "optimizer.beta1" || fe.Value != 1.0 || fe.Reason != "must be in [0, 1)" {
		t.Fatalf("Under = %v", err)
	}
	if err.Error() != "optimizer.beta1 = 1: must be in [0, 1)" {
		t.Errorf("Under().Error() = %q", err.Error())
	}
	// the inner error is left as it was
	if errors.As(inner, &fe); fe.Field != "beta1" {
		t.Errorf("Under changed its argument: %v", inner)
	}
	plain := errors.New("disk full")
	if Under("optimizer", plain) != plain {
		t.Errorf("Under changed an error that holds no *Error")
	}
}
