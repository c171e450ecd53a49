package cachestats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
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

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// tierToken is the admin token in the tier's ConfigMap, as the operator
// renders it.
var tierToken = strings.Repeat("t", vocabulary.MinAdminTokenLength)

// reading is how an agent answers one reading of its counters.
type reading struct {
	stats  vocabulary.AgentStats
	status int // 0: http.StatusOK
}

var (
	failing = reading{status: http.StatusInternalServerError}
	refused = reading{status: http.StatusUnauthorized} // what an agent answers another token
)

// agent is one cache pod and its agent's readings (the last repeats).
type agent struct {
	readings []reading
	notReady bool
}

// agents serves each agent's admin API on its own loopback address, taking
// only the tier's token, and returns the port and the pods of tier.
func agents(t *testing.T, tier types.NamespacedName, as ...agent) (int, []client.Object) {
	t.Helper()
	handlers := make([]http.Handler, len(as))
	for i, a := range as {
		var n atomic.Int32
		handlers[i] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != vocabulary.AgentStatsPath || r.Header.Get("Authorization") != "Bearer "+tierToken {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			rd := a.readings[min(int(n.Add(1))-1, len(a.readings)-1)]
			if rd.status != 0 {
				w.WriteHeader(rd.status)
				return
			}
			_ = json.NewEncoder(w).Encode(rd.stats)
		})
	}
	port, ips := testutil.ServeOnLoopbackHosts(t, handlers...)
	pods := make([]client.Object, len(as))
	for i, a := range as {
		pods[i] = cachePod(tier, fmt.Sprintf("%s-cache-%d", tier.Name, i), ips[i], !a.notReady)
	}
	return port, pods
}

func cachePod(tier types.NamespacedName, name, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tier.Namespace, Name: name, UID: types.UID(tier.Namespace + "/" + name), Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentCache, vocabulary.LabelInstance: tier.Name,
		}},
		Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// tierConfigMap holds the agents' configuration with the tier's token.
func tierConfigMap(tier types.NamespacedName, token string) *corev1.ConfigMap {
	conf, _ := json.Marshal(vocabulary.AgentConfig{AdminToken: token})
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: tier.Namespace, Name: vocabulary.CacheName(tier.Name)},
		Data:       map[string]string{vocabulary.AgentConfigFile: string(conf)},
	}
}

// newStats is a collector of the objects' cache tiers on port, as Start
// makes it, and the work queue it names policies into.
func newStats(t *testing.T, port int, objects ...client.Object) (*CacheStats, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	policies := &observations.Notifier{}
	if err := policies.Start(context.Background(), queue); err != nil {
		t.Fatal(err)
	}
	return &CacheStats{
		Client:       fake.NewClientBuilder().WithScheme(webfarmscheme.New()).WithObjects(objects...).Build(),
		Interval:     5 * time.Second,
		Agents:       cacheadmin.Client{HTTP: &http.Client{Timeout: 500 * time.Millisecond}, Port: int32(port)},
		Observations: &observations.Store{},
		Policies:     policies,
		last:         map[types.UID]vocabulary.AgentStats{},
		published:    map[types.NamespacedName]time.Time{},
	}, queue
}

func TestACacheTiersFiguresAddUpOverItsAgents(t *testing.T) {
	for i, tt := range []struct {
		name   string
		token  string  // in the tier's ConfigMap; "" for none
		agents []agent // each answers a baseline reading, then a second one
		want   *observations.CacheTier
	}{
		{
			name:  "two agents: what each counted since the baseline adds up, and their entries and memory are summed",
			token: tierToken,
			agents: []agent{
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 10, Misses: 5}}, {stats: vocabulary.AgentStats{Hits: 30, Misses: 6, Stored: 1, Objects: 4, MemoryBytes: 4096}}}},
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 1}}, {stats: vocabulary.AgentStats{Hits: 3, Bypasses: 2, Objects: 2, MemoryBytes: 1024}}}},
			},
			want: &observations.CacheTier{Grown: v1.CacheCounters{Hits: 22, Misses: 1, Bypasses: 2, Stored: 1}, Objects: 6, MemoryBytes: 5120},
		},
		{
			name:  "an agent answering an error counts nothing of that reading; the other still counts",
			token: tierToken,
			agents: []agent{
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 10}}, {stats: vocabulary.AgentStats{Hits: 15, Objects: 1}}}},
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 10}}, failing}},
			},
			want: &observations.CacheTier{Grown: v1.CacheCounters{Hits: 5}, Objects: 1},
		},
		{
			name:  "a pod that is not ready is not asked",
			token: tierToken,
			agents: []agent{
				{readings: []reading{{stats: vocabulary.AgentStats{Misses: 1}}, {stats: vocabulary.AgentStats{Misses: 2}}}},
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 500, Objects: 50}}}, notReady: true},
			},
			want: &observations.CacheTier{Grown: v1.CacheCounters{Misses: 1}},
		},
		{
			name:  "a tier whose ConfigMap holds no token is not read: its agents refuse the request",
			token: "",
			agents: []agent{
				{readings: []reading{{stats: vocabulary.AgentStats{Hits: 10}}}},
			},
			want: nil,
		},
		{
			name:   "a tier whose agents all refuse publishes nothing for its status",
			token:  tierToken,
			agents: []agent{{readings: []reading{refused}}, {readings: []reading{failing}}},
			want:   nil,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tier := types.NamespacedName{Namespace: fmt.Sprintf("tier-%d", i), Name: "images"} // metrics are global: a namespace per case
			port, pods := agents(t, tier, tt.agents...)
			s, queue := newStats(t, port, append(pods, tierConfigMap(tier, tt.token))...)
			s.collect(context.Background())
			s.collect(context.Background())
			got, due := s.Observations.CacheTierDue(tier)
			if due != (tt.want != nil) || (due && got != *tt.want) {
				t.Fatalf("due for the status: %+v (%v), want %+v", got, due, tt.want)
			}
			if notified := queue.Len() == 1; notified != due {
				t.Errorf("policy named for its status: %v, want %v", notified, due)
			}
			if !due {
				return
			}
			labels := []string{tier.Namespace, tier.Name}
			for name, pair := range map[string][2]float64{
				"hits":     {promtest.ToFloat64(cacheHits.WithLabelValues(labels...)), float64(tt.want.Grown.Hits)},
				"misses":   {promtest.ToFloat64(cacheMisses.WithLabelValues(labels...)), float64(tt.want.Grown.Misses)},
				"bypasses": {promtest.ToFloat64(cacheBypasses.WithLabelValues(labels...)), float64(tt.want.Grown.Bypasses)},
				"objects":  {promtest.ToFloat64(cacheObjects.WithLabelValues(labels...)), float64(tt.want.Objects)},
				"memory":   {promtest.ToFloat64(cacheMemory.WithLabelValues(labels...)), float64(tt.want.MemoryBytes)},
			} {
				if pair[0] != pair[1] {
					t.Errorf("metric %s = %v, want %v", name, pair[0], pair[1])
				}
			}
		})
	}
}

func TestACacheTiersFiguresAreDueForItsStatusOncePerStatusInterval(t *testing.T) {
	tier := types.NamespacedName{Namespace: "status-interval", Name: "images"}
	port, pods := agents(t, tier, agent{readings: []reading{
		{stats: vocabulary.AgentStats{Hits: 1}}, {stats: vocabulary.AgentStats{Hits: 2}}, {stats: vocabulary.AgentStats{Hits: 4}},
	}})
	s, queue := newStats(t, port, append(pods, tierConfigMap(tier, tierToken))...)
	s.StatusInterval = time.Hour
	for range 3 {
		s.collect(context.Background())
	}
	if queue.Len() != 1 {
		t.Errorf("the policy was named %d times within one status interval, want once", queue.Len())
	}
	// The growth after the first publication waits in the store for the next.
	if got, _ := s.Observations.CacheTierDue(tier); got.Grown.Hits != 0 {
		t.Errorf("due for the status: %d hits, want 0 until the next interval", got.Grown.Hits)
	}
	if got := promtest.ToFloat64(cacheHits.WithLabelValues(tier.Namespace, tier.Name)); got != 3 {
		t.Errorf("hits metric %v, want 3: the metrics follow every reading", got)
	}
}

func TestACachePodFirstSeenAfterTheBaselineCountsAllItCounted(t *testing.T) {
	tier := types.NamespacedName{Namespace: "first-seen", Name: "images"}
	port, pods := agents(t, tier,
		agent{readings: []reading{{stats: vocabulary.AgentStats{Hits: 100}}}},
		agent{readings: []reading{{stats: vocabulary.AgentStats{Hits: 7, Stored: 3, Objects: 3}}}})
	s, _ := newStats(t, port, pods[0], tierConfigMap(tier, tierToken)) // the second pod starts after the first reading
	s.collect(context.Background())
	if err := s.Client.Create(context.Background(), pods[1]); err != nil {
		t.Fatal(err)
	}
	s.collect(context.Background())
	want := observations.CacheTier{Grown: v1.CacheCounters{Hits: 7, Stored: 3}, Objects: 3}
	if got, _ := s.Observations.CacheTierDue(tier); got != want {
		t.Errorf("due for the status: %+v, want %+v (a new agent counted from zero)", got, want)
	}
}
