package nginx_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil/localpool"
)

// The queue timeout runs in the worker's real nginx with its njs script: the
// rendered config and script, moved to a loopback port and a temporary folder.
func TestAWorkerRefusesARequestThatWaitedLongerThanTheQueueTimeout(t *testing.T) {
	p := basePool()
	p.CPUMilli = 1000
	p.QueueTimeout = time.Second
	url := localpool.Start(t, p).URL

	now := func(offset time.Duration) string {
		return strconv.FormatInt(time.Now().Add(offset).UnixMilli(), 10)
	}
	tests := []struct {
		name     string
		queuedAt string // "" sends no header
		want     int
	}{
		{"a request that waited two seconds is refused", now(-2 * time.Second), model.QueueTimeoutStatus},
		{"a request that waited 100 ms is served", now(-100 * time.Millisecond), http.StatusOK},
		{"a request just stamped is served", now(0), http.StatusOK},
		{"a request without a stamp is served (it did not come through a frontend queue)", "", http.StatusOK},
		{"a stamp that is not a number is ignored", "yesterday", http.StatusOK},
		{"a stamp in the future (another node's clock) is served", now(time.Minute), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.queuedAt != "" {
				req.Header.Set(model.QueuedAtHeader, tt.queuedAt)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
