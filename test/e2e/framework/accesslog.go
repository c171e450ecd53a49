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
	return c.AccessLogEntries(t, namespace, farm, marker, 1)[0]
}

// AccessLogEntries waits for n access log lines whose path contains marker
// and returns the first n, oldest first (one frontend replica logs in order).
func (c *Cluster) AccessLogEntries(t testing.TB, namespace, farm, marker string, n int) []map[string]any {
	t.Helper()
	var found []map[string]any
	Eventually(t, 15*time.Second, func() error {
		found = nil
		logs := c.Run(t, "logs", "-n", namespace, "-l", "app.kubernetes.io/name=webfarm-frontend,app.kubernetes.io/instance="+farm, "--tail=-1")
		for line := range strings.SplitSeq(logs, "\n") {
			if !strings.HasPrefix(line, "{") || !strings.Contains(line, marker) {
				continue
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				return fmt.Errorf("the access log line is not JSON (%v): %s", err, line)
			}
			if found = append(found, entry); len(found) == n {
				return nil
			}
		}
		return fmt.Errorf("%d access log lines for %s yet, want %d", len(found), marker, n)
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
