// Package benchkit is what the loopback benchmarks (bench/dataplane and
// bench/cache) share, so that both measure alike and a fix reaches both: the
// servers they start (niced, pinned, in process groups of their own) and the
// CPU time those use, the machine's own load, the pool worker's nginx.conf
// and the baseline nginx proxy's as they put them on this host, the wrk
// client and its results, and the helpers of their reports.
package benchkit
