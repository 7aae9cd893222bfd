//go:build !unix

package proxy

import "time"

// cpuTime is not measured on this platform: the CPU ratios are left out.
func cpuTime() time.Duration { return 0 }
