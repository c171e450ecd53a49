package collect

import (
	"context"
	"time"
)

// Every calls read at once, then every interval until ctx ends.
func Every(ctx context.Context, interval time.Duration, read func(context.Context)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		read(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
