package stall

import "time"

// SetLateTimers makes l hand the timer of every wait to armed instead of
// starting it: the timer never fires on its own, and its Stop reports
// false, as time.Timer.Stop does once the callback has started. The test
// runs fire itself, at the moment it wants — also after the wait the timer
// bounded is over, as a callback that started just before its Stop runs
// then. No clock produces that interleaving on demand, a synctest bubble's
// included; the hook exists for the package's own tests only.
func SetLateTimers(l *Layer, armed func(d time.Duration, fire func())) {
	l.afterFunc = func(d time.Duration, f func()) stopper {
		armed(d, f)
		return lateTimer{}
	}
}

type lateTimer struct{}

func (lateTimer) Stop() bool { return false }
