// Package vocabulary holds the names the operator's parts share: the labels
// and annotations on generated objects, the names of children and Envoy
// clusters, ports, paths and header names, and the cache agent's
// configuration and admin API. It is the ground floor: it imports nothing of
// the project, and the renderers, collectors, activator, cache agent and
// controllers import it instead of each other (docs/architecture.md, "The
// layers").
package vocabulary
