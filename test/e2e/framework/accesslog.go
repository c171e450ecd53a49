package framework

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// AccessLogEntry waits for the JSON access log line of a farm's frontends
// whose path contains marker (a query string unique to one request) and
// returns its fields.
func (c *Cluster) AccessLogEntry(t testing.TB, namespace, farm, marker string) map[string]any {
	t.Helper()
	var found map[string]any
	Eventually(t, 15*time.Second, func() error {
		logs := c.Run(t, "logs", "-n", namespace, "-l", "app.kubernetes.io/name=webfarm-frontend,app.kubernetes.io/instance="+farm, "--tail=-1")
		for line := range strings.SplitSeq(logs, "\n") {
			if !strings.HasPrefix(line, "{") || !strings.Contains(line, marker) {
				continue
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				return fmt.Errorf("the access log line is not JSON (%v): %s", err, line)
			}
			found = entry
			return nil
		}
		return fmt.Errorf("no access log line for %s yet", marker)
	})
	return found
}

// CheckAccessLogFields fails the test for each field of the entry that does
// not have its wanted value (numbers as JSON has them: float64).
func CheckAccessLogFields(t testing.TB, entry map[string]any, want map[string]any) {
	t.Helper()
	for field, w := range want {
		if entry[field] != w {
			t.Errorf("access log %s is %v, want %v: %v", field, entry[field], w, entry)
		}
	}
}
