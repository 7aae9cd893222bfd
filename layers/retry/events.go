package retry

import (
	"time"

	"github.com/recourse-dev/recourse/layer"
)

func (c *call) emit(typ layer.EventType, f *layer.Failure, delay time.Duration, next int) error {
	if c.d.r.onEvent == nil && len(c.lc.Observers()) == 0 {
		// Nobody watches the call: the event, its progress snapshot and
		// its clock reading would be built for nothing.
		return nil
	}
	ev := c.event(typ)
	if f != nil {
		fc := *f
		ev.Failure = &fc
		if typ == layer.EventAttemptFailed {
			ev.HTTPStatus = f.HTTPStatus
		}
	}
	if typ == layer.EventAttemptSucceeded {
		ev.HTTPStatus = c.status
	}
	if typ == layer.EventQuotaRefused {
		ev.Quota = c.d.refusal
	}
	ev.Delay, ev.NextAttempt = delay, next
	return c.send(ev)
}

// event returns an event of type t for the current attempt.
func (c *call) event(t layer.EventType) layer.Event {
	ev := layer.Event{
		Type: t, Identity: c.id, Provider: c.provider, Operation: c.in.info.Operation, Model: c.in.info.Model,
		MaxAttempts: c.d.r.maxAttempts, Elapsed: c.d.r.mono() - c.start,
	}
	if c.cur != nil {
		ev.Progress = c.cur.Progress()
	}
	if c.resume != nil {
		ev.Resume = &layer.Resume{Cursor: c.resume.point.Cursor}
	}
	return ev
}

// send delivers ev to the policy's OnEvent, then to the observers of the
// call (per-call layers).
func (c *call) send(ev layer.Event) error { return c.lc.Emit(c.d.r.onEvent, ev) }
