package retry

import (
	"time"

	"github.com/recourse-dev/recourse/event"
)

func (c *call) emit(typ event.Type, f *event.Failure, delay time.Duration, next int) error {
	if c.d.r.onEvent == nil && len(c.lc.Observers()) == 0 {
		// Nobody watches the call: the event, its progress snapshot and
		// its clock reading would be built for nothing.
		return nil
	}
	ev := c.event(typ)
	if f != nil {
		fc := *f
		ev.Failure = &fc
		if typ == event.AttemptFailed {
			ev.HTTPStatus = f.HTTPStatus
		}
	}
	if typ == event.AttemptSucceeded {
		ev.HTTPStatus = c.status
	}
	if typ == event.QuotaRefused {
		ev.Quota = c.d.refusal
	}
	ev.Delay, ev.NextAttempt = delay, next
	return c.send(ev)
}

// event returns an event of type t for the current attempt.
func (c *call) event(t event.Type) event.Event {
	ev := event.Event{
		Type: t, Identity: c.id, Provider: c.provider, Operation: c.in.info.Operation, Model: c.in.info.Model,
		MaxAttempts: c.d.r.maxAttempts, Elapsed: c.d.r.mono() - c.start,
	}
	if c.cur != nil {
		ev.Progress = c.cur.Progress()
	}
	if c.resume != nil {
		ev.Resume = &event.Resume{Cursor: c.resume.point.Cursor}
	}
	return ev
}

// send delivers ev to the policy's OnEvent, then to the observers of the
// call (per-call layers).
func (c *call) send(ev event.Event) error { return c.lc.Emit(c.d.r.onEvent, ev) }
