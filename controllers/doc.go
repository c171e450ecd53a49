// Package controllers holds the reconcilers, one per kind (WebFarm, AppPool,
// CachePolicy) and one for the frontends' routing. Each fetches its object,
// resolves it into the model (internal/model), gathers what the collectors
// observed (internal/observations), decides (an AppPool through
// internal/lifecycle), renders children (internal/render/...), applies them
// (internal/apply) and writes its status once; counts the collectors saw
// (queue refusals, cache counters) enter the status in that one write, as
// does a farm's CertificatesReady condition (certificates.go), decided from
// what its frontends serve. Each is the one writer of its kind's status.
// setup.go builds the store of observations, its notifiers, the collectors
// (internal/collect/...) and the activator's server (internal/activator).
// docs/architecture.md draws the whole.
package controllers
