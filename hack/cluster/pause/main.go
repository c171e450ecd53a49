// Command pause is the local cluster's pod sandbox process: it holds the pod's
// namespaces, reaps orphaned children and exits on SIGINT or SIGTERM. It is
// built statically (CGO_ENABLED=0) and packaged as the sandbox image by
// hack/cluster/up.sh, because the local cluster has no registry to pull from.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
