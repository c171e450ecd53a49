package testutil

import (
	"testing"
	"time"
)

// Eventually polls check until it returns nil or the deadline passes, then
// fails the test with the last error. It is the tests' only way to wait.
func Eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 20 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		<-time.After(interval)
		interval = min(interval*2, 250*time.Millisecond)
	}
}
