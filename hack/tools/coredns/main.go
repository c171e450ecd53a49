// Command coredns is upstream CoreDNS with only the plugins the local
// cluster's Corefile uses (hack/cluster/coredns.yaml) and those of the Gateway
// API conformance suite's DNS backend (its base manifests' Corefile: forward,
// log, whoami), built from the pinned module. The full build compiles some
// sixty plugins and their cloud SDKs, none of which either loads.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// directives is the plugin chain's order: upstream's full list
// (core/dnsserver/zdirectives.go) reduced to the plugins above. A Corefile
// naming any other plugin fails to load.
var directives = []string{
	"reload",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
	"forward",
	"whoami",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
