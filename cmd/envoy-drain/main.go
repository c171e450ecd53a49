// Command envoy-drain is the Envoy frontend's preStop hook: it tells the
// Envoy beside it to drain, waits until the farm's connections are closed
// (within bounds) and exits 0 whatever happened. The Envoy image has no
// shell and no curl, so this static binary is the hook. See internal/drain.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"webfarm.dev/operator/internal/drain"
)

func main() {
	o := drain.Options{Poll: 250 * time.Millisecond}
	flag.StringVar(&o.Admin, "admin", drain.DefaultAdmin, "Envoy's admin interface, host:port")
	flag.DurationVar(&o.Minimum, "min", drain.DefaultMinimum, "drain at least this long (kube-proxy's time to forget the pod)")
	flag.DurationVar(&o.Maximum, "max", drain.DefaultMaximum, "drain at most this long (below the pod's grace period)")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), o.Maximum+time.Second)
	defer cancel()
	res := drain.Run(ctx, &http.Client{Timeout: 2 * time.Second}, o)
	if res.Err != nil {
		fmt.Fprintf(os.Stderr, "envoy-drain: %v\n", res.Err)
	}
	fmt.Fprintf(os.Stderr, "envoy-drain: done after %s, %d farm connections open\n", res.Elapsed.Round(time.Millisecond), res.Open)
}
