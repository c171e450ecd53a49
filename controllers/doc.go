// Package controllers holds one thin reconciler per kind: WebFarm, AppPool and
// CachePolicy. Each fetches its object, resolves it into the model
// (internal/model), renders children (internal/render/...), applies them
// (internal/apply) and writes its status once.
package controllers
