package retry

import (
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/event"
)

// attachEvidence attaches ev behind f and copies the token counts of its
// response evidence into the failure's safe Usage (R22.10): whatever codec
// reported them — an error frame's Completion, a failed body that decoded
// its usage — the attempt's record says what it cost. The counts are
// copied, so nothing else shares them.
func attachEvidence(f *event.Failure, ev event.Evidence) {
	if u := ev.Response.Usage; u != nil {
		c := chat.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		f.Usage = &c
		ev.Response.Usage = &chat.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	}
	f.Attach(ev)
}
