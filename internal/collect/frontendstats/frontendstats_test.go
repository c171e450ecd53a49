package frontendstats

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// counts is what one frontend's Envoy counted for the pool "web" by one
// reading.
type counts struct {
	rejected, timedOut, requests, fivexx, waiting, active uint64
	perWorker                                             map[string]uint64
}

// page is an Envoy 1.40 /stats/prometheus page with the figures of c for the
// pool "web", beside another cluster's that are not a pool's.
func (c counts) page() string {
	var b strings.Builder
	series := func(kind, name, labels string, v uint64) {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s{%senvoy_cluster_name=\"pool/web\"} %d\n", name, kind, name, labels, v)
	}
	series("counter", "envoy_cluster_upstream_rq_pending_overflow", "", c.rejected)
	series("counter", "envoy_cluster_upstream_rq", `envoy_response_code="599",`, c.timedOut)
	series("counter", "envoy_cluster_upstream_rq_xx", `envoy_response_code_class="5",`, c.fivexx)
	fmt.Fprintf(&b, "# TYPE envoy_cluster_upstream_rq_total counter\nenvoy_cluster_upstream_rq_total{envoy_cluster_name=\"pool/web\"} %d\n"+
		"envoy_cluster_upstream_rq_total{envoy_cluster_name=\"xds\"} 99\n", c.requests)
	series("gauge", "envoy_cluster_upstream_rq_pending_active", "", c.waiting)
	series("gauge", "envoy_cluster_upstream_rq_active", "", c.active)
	if len(c.perWorker) > 0 {
		b.WriteString("# TYPE envoy_cluster_endpoint_rq_total counter\n")
		for _, address := range slices.Sorted(maps.Keys(c.perWorker)) {
			fmt.Fprintf(&b, "envoy_cluster_endpoint_rq_total{envoy_cluster_name=\"pool/web\",envoy_endpoint_address=%q} %d\n", address, c.perWorker[address])
		}
	}
	return b.String()
}

func ok(c counts) testutil.Answer { return testutil.Answer{Status: http.StatusOK, Body: c.page()} }

var (
	failing   = testutil.Answer{Status: http.StatusServiceUnavailable, Body: "no healthy upstream"}
	hanging   = testutil.Answer{} // no answer in time
	malformed = testutil.Answer{Status: http.StatusOK, Body: "envoy_cluster_upstream_rq_total{envoy_cluster_name=\"pool/web\" 1\n"}
)

// frontend is one frontend pod and its answers, one per reading (the last
// repeats).
type frontend struct {
	answers  []testutil.Answer
	notReady bool
}

// frontends serves each frontend's stats on its own loopback address and
// returns the port and their pods in namespace.
func frontends(t *testing.T, namespace string, fs ...frontend) (int, []client.Object) {
	t.Helper()
	handlers := make([]http.Handler, len(fs))
	for i, f := range fs {
		handlers[i] = testutil.AnswerAt(vocabulary.FrontendMetricsPath, envoystats.Query, f.answers...)
	}
	port, ips := testutil.ServeOnLoopbackHosts(t, handlers...)
	pods := make([]client.Object, len(fs))
	for i, f := range fs {
		pods[i] = frontendPod(namespace, fmt.Sprintf("contoso-frontend-%d", i), ips[i], !f.notReady)
	}
	return port, pods
}

func frontendPod(namespace, name, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name), Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentFrontend, vocabulary.LabelInstance: "contoso",
		}},
		Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// newStats is a collector of the pods' frontends on port, as Start makes
// it, and the work queue it names pools into.
func newStats(t *testing.T, port int, pods ...client.Object) (*FrontendStats, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	pools := &observations.Notifier{}
	if err := pools.Start(context.Background(), queue); err != nil {
		t.Fatal(err)
	}
	return &FrontendStats{
		Client:       fake.NewClientBuilder().WithScheme(webfarmscheme.New()).WithObjects(pods...).Build(),
		Interval:     5 * time.Second,
		HTTP:         &http.Client{Timeout: 500 * time.Millisecond}, // a frontend that does not answer fails fast
		Port:         port,
		Observations: &observations.Store{},
		Pools:        pools,
		last:         map[types.UID]map[string]envoystats.Pool{},
		failing:      map[types.UID]bool{},
	}, queue
}

// figures are a pool's figures as the operator's metrics and observations
// hold them.
type figures struct {
	requests, fivexx, waiting, active float64
	refusals                          observations.QueueRefusals // without Last
	failures                          int
	perWorker                         map[string]int64 // by worker IP
}

func figuresOf(s *FrontendStats, pool types.NamespacedName, workers ...string) figures {
	labels := []string{pool.Namespace, pool.Name}
	f := figures{
		requests: promtest.ToFloat64(poolRequests.WithLabelValues(labels...)),
		fivexx:   promtest.ToFloat64(pool5xx.WithLabelValues(labels...)),
		waiting:  promtest.ToFloat64(poolWaiting.WithLabelValues(labels...)),
		active:   promtest.ToFloat64(poolActive.WithLabelValues(labels...)),
		failures: len(s.Observations.RecentFailures(pool, time.Now(), time.Hour)),
	}
	if r, ok := s.Observations.Refusals(pool); ok {
		f.refusals = observations.QueueRefusals{Rejected: r.Rejected, TimedOut: r.TimedOut}
	}
	for _, ip := range workers {
		if n, ok := s.Observations.Requests(pool, ip); ok {
			if f.perWorker == nil {
				f.perWorker = map[string]int64{}
			}
			f.perWorker[ip] = n
		}
	}
	return f
}

func TestAPoolsFiguresAddUpOverItsFarmsFrontends(t *testing.T) {
	for i, tt := range []struct {
		name       string
		frontends  []frontend // each answers a baseline reading, then a second one
		want       figures
		wantNotice bool
	}{
		{
			name: "two frontends: what each counted since the baseline adds up, and so do the queue's levels",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{rejected: 1, requests: 10, waiting: 2}), ok(counts{rejected: 4, timedOut: 1, requests: 30, waiting: 3, active: 5})}},
				{answers: []testutil.Answer{ok(counts{requests: 5}), ok(counts{rejected: 2, requests: 25, waiting: 1, active: 1})}},
			},
			want:       figures{requests: 40, waiting: 4, active: 6, refusals: observations.QueueRefusals{Rejected: 5, TimedOut: 1}},
			wantNotice: true, // the pool's status.queue counts the refusals
		},
		{
			name: "a frontend answering an error counts nothing of that reading; the other still counts",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 10}), ok(counts{requests: 30, active: 2})}},
				{answers: []testutil.Answer{ok(counts{requests: 5}), failing}},
			},
			want: figures{requests: 20, active: 2},
		},
		{
			name: "a frontend that does not answer in time counts nothing of that reading",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 10}), hanging}},
				{answers: []testutil.Answer{ok(counts{requests: 5}), ok(counts{requests: 6})}},
			},
			want: figures{requests: 1},
		},
		{
			name: "a malformed page counts nothing",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 10}), malformed}},
			},
			want: figures{},
		},
		{
			name: "a frontend that is not ready is not read",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 10}), ok(counts{requests: 20})}},
				{answers: []testutil.Answer{ok(counts{}), ok(counts{requests: 1000, rejected: 50})}, notReady: true},
			},
			want: figures{requests: 10},
		},
		{
			name: "a burst of 5xx from the pool's workers is one worker failure",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 100, fivexx: 1}), ok(counts{requests: 120, fivexx: 16})}},
			},
			want:       figures{requests: 20, fivexx: 15, failures: 1},
			wantNotice: true, // rapid-fail protection looks at the pool
		},
		{
			name: "the frontend's own 503s for a full queue are refusals, not worker failures",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{}), ok(counts{requests: 5, rejected: 20, fivexx: 20})}},
			},
			want:       figures{requests: 5, fivexx: 20, refusals: observations.QueueRefusals{Rejected: 20}},
			wantNotice: true,
		},
		{
			name: "what each worker was sent is summed over the frontends, by the worker's IP",
			frontends: []frontend{
				{answers: []testutil.Answer{ok(counts{requests: 10, perWorker: map[string]uint64{"10.0.0.5:8080": 10}})}},
				{answers: []testutil.Answer{ok(counts{requests: 12, perWorker: map[string]uint64{"10.0.0.5:8080": 5, "10.0.0.6:8080": 7}})}},
			},
			want: figures{perWorker: map[string]int64{"10.0.0.5": 15, "10.0.0.6": 7}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := types.NamespacedName{Namespace: fmt.Sprintf("figures-%d", i), Name: "web"} // metrics are global: a namespace per case
			port, pods := frontends(t, pool.Namespace, tt.frontends...)
			s, queue := newStats(t, port, pods...)
			s.collect(context.Background())
			if queue.Len() != 0 {
				t.Errorf("the baseline reading named a pool")
			}
			s.collect(context.Background())
			if got := figuresOf(s, pool, "10.0.0.5", "10.0.0.6"); !equalFigures(got, tt.want) {
				t.Errorf("figures %+v, want %+v", got, tt.want)
			}
			if notified := queue.Len() == 1; notified != tt.wantNotice {
				t.Errorf("pool named for a look: %v, want %v", notified, tt.wantNotice)
			}
		})
	}
}

func equalFigures(a, b figures) bool {
	return a.requests == b.requests && a.fivexx == b.fivexx && a.waiting == b.waiting && a.active == b.active &&
		a.refusals == b.refusals && a.failures == b.failures && maps.Equal(a.perWorker, b.perWorker)
}

func TestAFrontendFirstSeenAfterTheBaselineCountsAllItCounted(t *testing.T) {
	pool := types.NamespacedName{Namespace: "first-seen", Name: "web"}
	port, pods := frontends(t, pool.Namespace,
		frontend{answers: []testutil.Answer{ok(counts{requests: 100})}},
		frontend{answers: []testutil.Answer{ok(counts{requests: 7, rejected: 2})}})
	s, _ := newStats(t, port, pods[0]) // the second frontend starts after the first reading
	s.collect(context.Background())
	if err := s.Client.Create(context.Background(), pods[1]); err != nil {
		t.Fatal(err)
	}
	s.collect(context.Background())
	want := figures{requests: 7, refusals: observations.QueueRefusals{Rejected: 2}}
	if got := figuresOf(s, pool); !equalFigures(got, want) {
		t.Errorf("figures %+v, want %+v (a new Envoy counted from zero)", got, want)
	}
}

func TestAFrontendThatFailedCountsOnlyWhatIsNewWhenItAnswersAgain(t *testing.T) {
	pool := types.NamespacedName{Namespace: "answers-again", Name: "web"}
	port, pods := frontends(t, pool.Namespace,
		frontend{answers: []testutil.Answer{ok(counts{requests: 10}), failing, ok(counts{requests: 25})}})
	s, _ := newStats(t, port, pods...)
	for range 3 {
		s.collect(context.Background())
	}
	if got, want := figuresOf(s, pool), (figures{requests: 15}); !equalFigures(got, want) {
		t.Errorf("figures %+v, want %+v", got, want)
	}
}

func TestAFrontendThatCannotBeReadKeepsItsNamespacesPoolsActive(t *testing.T) {
	pool := types.NamespacedName{Namespace: "unknown-is-not-quiet", Name: "web"}
	port, pods := frontends(t, pool.Namespace, frontend{answers: []testutil.Answer{failing}})
	s, _ := newStats(t, port, pods...)
	longAgo := time.Now().Add(-time.Hour)
	s.Observations.Touch(pool, longAgo)
	s.collect(context.Background())
	if last := s.Observations.LastActive(pool, time.Now()); !last.After(longAgo) {
		t.Errorf("the pool was last active %s, an hour ago: a frontend that cannot be read made it look quiet", last)
	}
}

func TestAPoolWithoutRequestsStaysQuiet(t *testing.T) {
	pool := types.NamespacedName{Namespace: "quiet", Name: "web"}
	port, pods := frontends(t, pool.Namespace, frontend{answers: []testutil.Answer{ok(counts{requests: 10, waiting: 1})}})
	s, _ := newStats(t, port, pods...)
	longAgo := time.Now().Add(-time.Hour)
	s.Observations.Touch(pool, longAgo)
	s.collect(context.Background())
	s.collect(context.Background())
	if last := s.Observations.LastActive(pool, time.Now()); !last.Equal(longAgo) {
		t.Errorf("the pool was last active %s, want %s: no request reached it", last, longAgo)
	}
}
