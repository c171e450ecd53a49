//go:build tools

// Package tools pins the Prometheus Operator and its config reloader (the
// end-to-end suite's monitoring, as its users run it) at the release of
// go.mod. Its own go.mod replaces its API and client modules with folders of
// its repository, so `go install ...@version` refuses it: this module names
// those modules' published versions instead.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)
