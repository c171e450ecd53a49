//go:build tools

// Package tools pins promtool, the Prometheus command that checks and
// unit-tests the chart's alerting rules, at the Prometheus release of go.mod.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
