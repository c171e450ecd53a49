// Package collect holds, one package each, the collectors: leader-only loops that read the frontends, the cache agents and
// Prometheus, and write what they see into internal/observations (and the operator's metrics), never into a status.
package collect
