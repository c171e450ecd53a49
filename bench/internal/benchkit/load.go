package benchkit

import (
	"fmt"
	"os"
	"strings"
)

// LoadAverage is the machine's load average over 1, 5 and 15 minutes as
// /proc/loadavg gives it: on a shared machine, a benchmark states the other
// work that ran beside it, before and after its run.
func LoadAverage() (string, error) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", err
	}
	return ParseLoadAverage(string(raw))
}

// ParseLoadAverage reads the three averages of a /proc/loadavg line.
func ParseLoadAverage(line string) (string, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return "", fmt.Errorf("unexpected /proc/loadavg: %q", line)
	}
	return strings.Join(f[:3], ", "), nil
}
