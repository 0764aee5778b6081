package harness

import (
	"os"
	"strings"
)

// LoadAverage returns the machine's load averages over 1, 5 and 15 minutes, the first
// three fields of /proc/loadavg ("unknown" where there is none), for the figures of
// timing-sensitive tests and benchmarks.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
