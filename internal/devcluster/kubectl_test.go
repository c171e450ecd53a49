package devcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadiness(t *testing.T) {
	for _, c := range []struct {
		name, line, want string
	}{
		{"an object ready and not degraded for its current generation is ready", "3 3 True False Available", ""},
		{"an object whose status describes an older generation is not reconciled yet", "4 3 True False Available", "not reconciled yet"},
		{"an object without status is not reconciled yet", "1", "not reconciled yet"},
		{"an object reconciled but not Ready says why", "2 2 False False 0/2 replicas ready", "not Ready: False False 0/2 replicas ready"},
		{"an object reconciled without conditions is not ready", "2 2", "not Ready: "},
		{"an object Ready but Degraded is not ready yet", "2 2 True True 1/2 replicas ready", "Degraded: 1/2 replicas ready"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := readiness(c.line); got != c.want {
				t.Errorf("readiness(%q) = %q, want %q", c.line, got, c.want)
			}
		})
	}
}

func TestPollReturnsTheLastErrorAfterTheDeadline(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), 50*time.Millisecond, 10*time.Millisecond, func() error {
		calls++
		return errors.New("still waiting")
	})
	if err == nil || !strings.Contains(err.Error(), "still waiting") || calls < 2 {
		t.Fatalf("Poll = %v after %d calls, want the check's error after several calls", err, calls)
	}
}

func TestPollStopsAtTheFirstSuccess(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), time.Minute, time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollEndsAtOnceWhenACheckStopsIt(t *testing.T) {
	calls := 0
	exited := errors.New("the process exited")
	err := Poll(context.Background(), time.Minute, time.Millisecond, func() error {
		calls++
		return Stop(exited)
	})
	if !errors.Is(err, exited) || calls != 1 {
		t.Fatalf("Poll = %v after %d calls, want the stopping error after 1", err, calls)
	}
}
