package envoy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// FuzzClientLimits builds a WebFarm whose client limits are fuzzed (the
// request headers and body timeouts, the headers' size bound, and the rates
// per address and per /24 network; a rate of 0 is unset; L4 mode or not), resolves it as
// the controllers do and renders its routing. Whatever the API server would
// admit (apiAdmitsClientLimits mirrors the CRD schema) the model must
// accept and the real `envoy --mode validate` must pass; whatever the model
// accepts renders only extensions of the golden files.
func FuzzClientLimits(f *testing.F) {
	// headers timeout, body timeout, headers KiB, per-address rate and
	// burst, per-network rate and burst, L4 mode.
	f.Add("", "", int32(0), int32(0), int32(0), int32(0), int32(0), false)
	f.Add("10s", "120s", int32(16), int32(20), int32(40), int32(200), int32(0), false)
	f.Add("10s", "120s", int32(16), int32(20), int32(40), int32(200), int32(0), true)
	f.Add("1s", "1h", int32(96), int32(1000000), int32(10000000), int32(1), int32(1), false)
	f.Add("5m", "1s", int32(1), int32(1), int32(0), int32(1000000), int32(1000000), false)
	// The hostile values, one field at a time.
	for _, d := range []string{"0s", "-1s", "5m1s", "1h1ms", "999ms", "10", "10s\n}", "2562047h47m16.854775807s", "1ns"} {
		f.Add(d, d, int32(0), int32(0), int32(0), int32(0), int32(0), false)
	}
	for _, n := range []int32{-1, 97, 8193, 2147483647, -2147483648} {
		f.Add("", "", n, n, n, n, n, false)
	}
	f.Add("", "", int32(0), int32(10), int32(9), int32(1000001), int32(10000001), false)

	f.Fuzz(func(t *testing.T, headersTimeout, bodyTimeout string, headersKiB, addressRate, addressBurst, networkRate, networkBurst int32, l4 bool) {
		wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "farm", Namespace: "web"}, Spec: v1.WebFarmSpec{
			Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}}},
		}}
		if l4 {
			wf.Spec.UnavailableResponse = v1.UnavailableL4
		}
		l := &wf.Spec.Frontend.ClientLimits
		l.RequestHeadersTimeout, l.RequestBodyTimeout, l.MaxRequestHeadersKiB = v1.Duration(headersTimeout), v1.Duration(bodyTimeout), headersKiB
		if addressRate != 0 {
			l.PerAddress = v1.RequestRate{RequestsPerSecond: addressRate, Burst: addressBurst}
		}
		if networkRate != 0 {
			l.PerClassC = v1.RequestRate{RequestsPerSecond: networkRate, Burst: networkBurst}
		}
		platform := model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000}
		admitted := apiAdmitsClientLimits(*l)
		renderWebFarm(t, wf, platform, admitted, "client limits")
	})
}

// apiAdmitsClientLimits mirrors the CRD schema of frontend.clientLimits.
func apiAdmitsClientLimits(l v1.ClientLimits) bool {
	rate := func(r v1.RequestRate) bool {
		return r == (v1.RequestRate{}) || r.RequestsPerSecond >= 1 && r.RequestsPerSecond <= 1000000 &&
			(r.Burst == 0 || r.Burst >= r.RequestsPerSecond && r.Burst <= 10000000)
	}
	return durationIn(l.RequestHeadersTimeout, time.Second, 5*time.Minute) && durationIn(l.RequestBodyTimeout, time.Second, time.Hour) &&
		l.MaxRequestHeadersKiB >= 0 && l.MaxRequestHeadersKiB <= 96 && rate(l.PerAddress) && rate(l.PerClassC)
}
