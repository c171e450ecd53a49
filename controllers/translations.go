package controllers

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/gateway"
)

// Translations keep each Gateway's last translation (gateway.Attach), shared
// by the three controllers that need it: the routing controller (the
// farm's sites), the WebFarm controller (their count) and the Gateway
// controller (the statuses). A route's change wakes all three; the first
// translates and the other two find its answer, where each used to
// translate every route of the Gateway again. A translation is reused while
// the fingerprint of what it read holds: a route's status write changes no
// route's generation, so it costs no translation.
type Translations struct {
	mu       sync.Mutex
	gateways map[types.NamespacedName]*translation
}

var translationsMade = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "webfarm_gateway_translations_total",
	Help: "Translations of a Gateway and its routes (gateway.Attach) made; the other reads of a Gateway's routing reuse the last one.",
})

func init() { metrics.Registry.MustRegister(translationsMade) }

type translation struct {
	// mu makes a controller that needs a Gateway's translation wait for
	// the one under way, and then take it.
	mu          sync.Mutex
	fingerprint uint64
	valid       bool
	in          gateway.Inputs
	res         gateway.Result
}

// Translate is the Gateway's translation of the objects as c reads them now.
// Its inputs hold objects shared with the cache (and with other callers):
// they are read-only. Without Translations (nil) every call translates.
func (t *Translations) Translate(ctx context.Context, c client.Reader, gw *gwv1.Gateway) (gateway.Inputs, gateway.Result, error) {
	if t == nil {
		in, err := gatewayInputs(ctx, c, gw)
		if err != nil {
			return in, gateway.Result{}, err
		}
		return in, gateway.Attach(in), nil
	}
	e := t.entry(client.ObjectKeyFromObject(gw))
	e.mu.Lock()
	defer e.mu.Unlock()
	in, err := gatewayInputs(ctx, c, gw)
	if err != nil {
		return in, gateway.Result{}, err
	}
	fp := fingerprint(in)
	if e.valid && e.fingerprint == fp {
		return e.in, e.res, nil
	}
	res := gateway.Attach(in)
	translationsMade.Inc()
	e.in, e.res, e.fingerprint, e.valid = in, res, fp, true
	return in, res, nil
}

// Forget drops a deleted Gateway's translation.
func (t *Translations) Forget(gw types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gateways, gw)
}

func (t *Translations) entry(key types.NamespacedName) *translation {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gateways == nil {
		t.gateways = map[types.NamespacedName]*translation{}
	}
	e, ok := t.gateways[key]
	if !ok {
		e = &translation{}
		t.gateways[key] = e
	}
	return e
}

// fingerprint digests everything Attach reads: the same fingerprint, the
// same translation. Routes count by identity and generation (their status is
// not read); the sum over routes needs no sorting of 20,000 of them.
func fingerprint(in gateway.Inputs) uint64 {
	item := func(parts ...string) uint64 {
		h := fnv.New64a()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		return h.Sum64()
	}
	gw := in.Gateway
	sum := item("gateway", string(gw.UID), strconv.FormatInt(gw.Generation, 10))
	f := in.Farm
	farm := append([]string{"farm", f.Name, f.Problem, strconv.Itoa(int(f.HTTPPort)), strconv.Itoa(int(f.HTTPSPort)),
		strconv.FormatBool(f.DefaultCertificate), "hosts"}, f.Hosts...)
	farm = append(append(farm, "tls hosts"), f.TLSHosts...)
	sum += item(append(append(farm, "addresses"), f.Addresses...)...)
	for _, r := range in.Routes {
		sum += item("route", string(r.UID), strconv.FormatInt(r.Generation, 10))
	}
	for ns, labels := range in.NamespaceLabels {
		parts := []string{"namespace", ns}
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			parts = append(parts, k, labels[k])
		}
		sum += item(parts...)
	}
	for _, g := range in.Grants {
		sum += item("grant", string(g.UID), g.ResourceVersion)
	}
	for kind, backends := range in.Backends {
		for key, b := range backends {
			parts := []string{"backend", kind, key.String(), b.ClusterIP}
			for _, p := range b.Ports {
				parts = append(parts, strconv.Itoa(int(p)), strconv.Itoa(int(b.TargetPorts[p])), strconv.FormatBool(b.H2CPorts[p]))
			}
			sum += item(parts...)
		}
	}
	for name, ok := range in.CachePolicies {
		sum += item("cachepolicy", name, strconv.FormatBool(ok))
	}
	for key, spec := range in.SiteContents {
		// fmt prints the spec's slices and fields in order (it has no
		// pointers).
		sum += item("sitecontent", key.String(), fmt.Sprintf("%+v", spec))
	}
	return sum
}
