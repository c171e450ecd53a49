package framework

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// AccessLogEntry waits for the JSON access log line of a farm's frontends
// whose path ends with marker (a query string unique to one request) and
// returns its fields.
func (c *Cluster) AccessLogEntry(t testing.TB, namespace, farm, marker string) map[string]any {
	t.Helper()
	return c.AccessLogEntries(t, namespace, farm, 1, func(entry map[string]any) bool {
		path, _ := entry["path"].(string)
		return strings.HasSuffix(path, marker)
	})[0]
}

// AccessLogEntries waits for n JSON access log lines of a farm's frontends
// that match and returns the first n by the time their requests started,
// over all the farm's frontend replicas.
func (c *Cluster) AccessLogEntries(t testing.TB, namespace, farm string, n int, match func(entry map[string]any) bool) []map[string]any {
	t.Helper()
	var found []map[string]any
	Eventually(t, 15*time.Second, func() error {
		found = nil
		// One log per frontend pod, one after the other: the entries are
		// put back in the order the requests came.
		logs := c.Run(t, "logs", "-n", namespace, "-l", "app.kubernetes.io/name=webfarm-frontend,app.kubernetes.io/instance="+farm, "--tail=-1")
		for line := range strings.SplitSeq(logs, "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				return fmt.Errorf("the access log line is not JSON (%v): %s", err, line)
			}
			if match(entry) {
				found = append(found, entry)
			}
		}
		if len(found) < n {
			return fmt.Errorf("%d matching access log lines yet, want %d", len(found), n)
		}
		slices.SortStableFunc(found, func(a, b map[string]any) int { return loggedAt(a).Compare(loggedAt(b)) })
		found = found[:n]
		return nil
	})
	return found
}

// loggedAt is when an entry's request started (zero if it does not say).
func loggedAt(entry map[string]any) time.Time {
	s, _ := entry["time"].(string)
	at, _ := time.Parse(time.RFC3339Nano, s)
	return at
}

// LoggedSince matches the access log lines of requests to path that started
// at or after since.
func LoggedSince(path string, since time.Time) func(entry map[string]any) bool {
	return func(entry map[string]any) bool {
		s, _ := entry["time"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && entry["path"] == path && !at.Before(since.Truncate(time.Millisecond))
	}
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
