// Queue timeout of an application pool (IIS AspQueueTimeout): a request is
// checked when a worker takes it from the queue, and one that has waited
// longer than the pool's timeout since it reached the frontend is refused.
// The frontend stamps the arrival time (milliseconds since the epoch) on the
// request; nginx.conf sets the timeout. Rendered by webfarm-operator.
function expired(r) {
    var queuedAt = Number(r.headersIn['X-Webfarm-Queued-At']);
    var timeout = Number(r.variables.webfarm_queue_timeout_ms);
    if (!(queuedAt > 0) || !(timeout > 0)) {
        return '';
    }
    return Date.now() - queuedAt > timeout ? '1' : '';
}

export default {expired};
