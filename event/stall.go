package event

// StallLimit names the per-attempt stall limit that ended an attempt. The
// limits are opt-in (package layers/stall); the default chain has none, and
// a Failure's Stall is then always empty.
type StallLimit string

// The per-attempt stall limits.
const (
	// StallHeader is the header timeout: the response headers did not
	// arrive in time after the request was handed to the transport.
	StallHeader StallLimit = "header_timeout"
	// StallFirstOutput is the first-output timeout: no semantic byte
	// (reasoning, content or a tool fragment) arrived in time after the
	// response headers. Keepalives are not output.
	StallFirstOutput StallLimit = "first_output_timeout"
	// StallIdle is the idle timeout: no byte at all (keepalives included)
	// arrived in time while the attempt was waiting for the next one.
	StallIdle StallLimit = "idle_timeout"
)

// Text returns the limit as a short phrase for status lines and notices:
// "header timeout", "first-output timeout", "idle timeout", or "stall" for
// a value outside the defined set.
func (l StallLimit) Text() string {
	switch l {
	case StallHeader:
		return "header timeout"
	case StallFirstOutput:
		return "first-output timeout"
	case StallIdle:
		return "idle timeout"
	}
	return "stall"
}
