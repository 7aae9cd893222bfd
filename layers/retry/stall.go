package retry

import (
	"errors"

	"github.com/recourse-dev/recourse/layer"
)

// noteStall records in f the per-attempt stall limit that ended the attempt
// with err, when err is (or wraps) a *layer.StallError. A stall is a
// transport failure — an HTTP failure keeps its category when the stall cut
// an error response's body — and a cancelled call stays cancelled: the
// caller's cancellation wins over a limit that fired at the same time.
func noteStall(f *layer.Failure, err error) {
	if err == nil || f.Category == layer.CategoryCancellation {
		return
	}
	var se *layer.StallError
	if !errors.As(err, &se) {
		return
	}
	f.Stall = se.Limit
	if f.Category != layer.CategoryHTTP {
		f.Category = layer.CategoryTransport
	}
}
