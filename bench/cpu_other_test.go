//go:build !unix

package bench

import "time"

// cpuTime is not measured on this platform: the CPU ratio is left out.
func cpuTime() time.Duration { return 0 }
