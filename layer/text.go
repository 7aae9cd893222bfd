package layer

import (
	"strconv"
	"time"
)

// FormatDelay renders a wait for display, the one delay wording of the
// broker's status lines and the proxy's in-band notices (R17.2, R21.6):
// from one second up in seconds with one decimal, rounded half up to the
// tenth ("1.2s", "2.0s", "12.0s"); below in whole milliseconds, truncated
// ("800ms", "0ms"). A negative d is shown as "0ms".
func FormatDelay(d time.Duration) string {
	ms := max(d.Milliseconds(), 0)
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	tenths := (ms + 50) / 100
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10) + "s"
}
