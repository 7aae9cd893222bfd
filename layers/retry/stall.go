package retry

import (
	"errors"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// noteStall records in f the per-attempt stall limit that ended the attempt
// with err, when err is (or wraps) a *layer.StallError whose Limit is one
// of the vocabulary's (event.StallHeader, StallFirstOutput, StallIdle);
// another Limit is not recorded, but the attempt is still a stall. A stall
// is a transport failure — an HTTP failure keeps its category when the stall cut
// an error response's body — and a cancelled call stays cancelled: the
// caller's cancellation wins over a limit that fired at the same time.
func noteStall(f *event.Failure, err error) {
	if err == nil || f.Category == event.CategoryCancellation {
		return
	}
	var se *layer.StallError
	if !errors.As(err, &se) {
		return
	}
	switch se.Limit {
	case event.StallHeader, event.StallFirstOutput, event.StallIdle:
		f.Stall = se.Limit
	default:
		// A limit of its own, from a per-attempt layer of the
		// application: the attempt is still a stall, so a transport
		// failure, but the failure (a safe output) records only the
		// vocabulary's limits.
	}
	if f.Category != event.CategoryHTTP {
		f.Category = event.CategoryTransport
	}
}
