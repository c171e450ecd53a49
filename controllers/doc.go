// Package controllers holds the reconcilers, one per kind (WebFarm, AppPool,
// CachePolicy) and one for the frontends' routing. Each fetches its object,
// resolves it into the model (internal/model), gathers what the collectors
// observed, decides (an AppPool through internal/lifecycle), renders children
// (internal/render/...), applies them (internal/apply) and writes its status
// once. The leader-only collectors that feed the AppPool reconciler
// (frontendstats.go, cachestats.go, cpumonitor.go, autoscaler.go) live here
// too for now; setup.go wires them and the activator's server
// (internal/activator). docs/architecture.md draws the whole.
package controllers
