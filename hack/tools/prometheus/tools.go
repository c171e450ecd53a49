//go:build tools

// Package tools pins two commands of one Prometheus release (go.mod):
// promtool, which checks and unit-tests the chart's alerting rules, and the
// Prometheus server the end-to-end suite runs (built with Kubernetes service
// discovery only, see hack/install-tools.sh).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
