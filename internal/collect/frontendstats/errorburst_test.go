package frontendstats

import (
	"testing"
	"time"
)

func TestErrorBurst(t *testing.T) {
	for _, tt := range []struct {
		name   string
		totals poolTotals
		want   bool
	}{
		{"ten 5xx out of twenty answers are a burst", poolTotals{responses5xx: 10, requests: 20}, true},
		{"nine 5xx are too few to count", poolTotals{responses5xx: 9, requests: 9}, false},
		{"a few 5xx among many good answers are not a burst", poolTotals{responses5xx: 40, requests: 1000}, false},
		{"the frontend's own 503s for a full queue are not the workers' errors", poolTotals{responses5xx: 30, requests: 40, rejected: 25}, false},
		{"worker errors beside queue rejections still count", poolTotals{responses5xx: 40, requests: 50, rejected: 20}, true},
		{"requests refused for waiting past the queue timeout are not the workers' errors", poolTotals{responses5xx: 30, requests: 40, timedOut: 30}, false},
		{"an overloaded pool refusing both ways is not failing", poolTotals{responses5xx: 60, requests: 70, rejected: 30, timedOut: 30}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorBurst(&tt.totals, 5*time.Second, time.Now())
			if got != tt.want {
				t.Errorf("errorBurst(%+v) = %v, want %v", tt.totals, got, tt.want)
			}
		})
	}
}
