package certificates

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

var farmKey = types.NamespacedName{Namespace: "shop", Name: "contoso"}

func farm(tls bool) *v1.WebFarm {
	site := v1.Site{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: "web"}}}
	if tls {
		site.TLS = v1.SiteTLS{SecretName: "blog-tls"}
	}
	return &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: farmKey.Namespace, Name: farmKey.Name}, Spec: v1.WebFarmSpec{Sites: []v1.Site{site}}}
}

// Envoy's admin page of a frontend that loaded blog's certificate loaded
// times and rejected it rejected times.
func page(loaded, rejected int) string {
	return "# TYPE envoy_sds_update_success counter\nenvoy_sds_update_success{envoy_xds_resource_name=\"cert_blog\"} " + strconv.Itoa(loaded) +
		"\n# TYPE envoy_sds_update_rejected counter\nenvoy_sds_update_rejected{envoy_xds_resource_name=\"cert_blog\"} " + strconv.Itoa(rejected) + "\n"
}

// frontend is how one frontend's admin page answers.
type frontend struct {
	testutil.Answer // Status 0: it does not answer in time
	ready           bool
}

// frontends serves each frontend's page on its own loopback address, all on
// one port as the frontends' status port is, and returns their pods.
func frontends(t *testing.T, answers []frontend) (port int, pods []client.Object) {
	t.Helper()
	handlers := make([]http.Handler, len(answers))
	for i, a := range answers {
		handlers[i] = testutil.AnswerAt(vocabulary.FrontendMetricsPath, envoystats.CertificateQuery, a.Answer)
	}
	port, ips := testutil.ServeOnLoopbackHosts(t, handlers...)
	for i, a := range answers {
		ip := ips[i]
		ready := corev1.ConditionFalse
		if a.ready {
			ready = corev1.ConditionTrue
		}
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: farmKey.Namespace, Name: "contoso-frontend-" + string(rune('a'+i)), Labels: map[string]string{
				vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentFrontend, vocabulary.LabelInstance: farmKey.Name,
			}},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		})
	}
	return port, pods
}

// newCertificates is a collector of the objects' farms reading their
// frontends on port, and the work queue it names farms into.
func newCertificates(t *testing.T, port int, objects ...client.Object) (*Certificates, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	scheme := webfarmscheme.New()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	farms := &observations.Notifier{}
	if err := farms.Start(context.Background(), queue); err != nil {
		t.Fatal(err)
	}
	return &Certificates{
		Client:       fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build(),
		HTTP:         &http.Client{Timeout: 500 * time.Millisecond}, // a frontend that does not answer fails fast
		Port:         port,
		Observations: &observations.Store{},
		Farms:        farms,
	}, queue
}

func TestCertificatesStoresWhatEachReadyFrontendLoaded(t *testing.T) {
	ok := func(loaded, rejected int) frontend {
		return frontend{testutil.Answer{Status: http.StatusOK, Body: page(loaded, rejected)}, true}
	}
	blog := func(loaded, rejected uint64) map[string]envoystats.Certificate {
		return map[string]envoystats.Certificate{"blog": {Loaded: loaded, Rejected: rejected}}
	}
	for _, tt := range []struct {
		name       string
		farm       *v1.WebFarm
		answers    []frontend
		want       observations.FrontendCertificates // nil: nothing stored
		wantNotice bool
	}{
		{"every frontend answered, in the order of their names", farm(true), []frontend{ok(1, 0), ok(0, 2)},
			observations.FrontendCertificates{blog(1, 0), blog(0, 2)}, true},
		{"a frontend answering an error says nothing; the others do", farm(true), []frontend{{testutil.Answer{Status: http.StatusInternalServerError, Body: "down"}, true}, ok(1, 0)},
			observations.FrontendCertificates{blog(1, 0)}, true},
		{"a frontend with a malformed page says nothing", farm(true), []frontend{ok(1, 0), {testutil.Answer{Status: http.StatusOK, Body: "envoy_sds_update_success{"}, true}},
			observations.FrontendCertificates{blog(1, 0)}, true},
		{"a frontend that does not answer in time says nothing", farm(true), []frontend{{testutil.Answer{}, true}, ok(0, 1)},
			observations.FrontendCertificates{blog(0, 1)}, true},
		{"a frontend not ready is not read", farm(true), []frontend{{testutil.Answer{Status: http.StatusOK, Body: page(0, 5)}, false}, ok(1, 0)},
			observations.FrontendCertificates{blog(1, 0)}, true},
		{"no frontend could be read: nothing to judge", farm(true), []frontend{{testutil.Answer{Status: http.StatusServiceUnavailable}, true}, {testutil.Answer{}, true}},
			nil, false},
		{"a farm whose frontends serve no certificate has nothing to judge", farm(false), []frontend{{testutil.Answer{Status: http.StatusOK}, true}},
			nil, false},
		{"a farm without an HTTPS site of its own is judged by what its frontends serve (a Gateway's listeners)", farm(false), []frontend{ok(1, 0)},
			observations.FrontendCertificates{blog(1, 0)}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			port, pods := frontends(t, tt.answers)
			c, queue := newCertificates(t, port, append(pods, tt.farm)...)
			c.Check(context.Background())
			got, stored := c.Observations.Certificates(farmKey)
			if stored != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("stored %v (%v), want %v", got, stored, tt.want)
			}
			if notified := queue.Len() == 1; notified != tt.wantNotice {
				t.Errorf("farm notified: %v, want %v", notified, tt.wantNotice)
			}
		})
	}
}

func TestCertificatesNamesAFarmOnlyWhenItsFiguresChange(t *testing.T) {
	port, pods := frontends(t, []frontend{{testutil.Answer{Status: http.StatusOK, Body: page(1, 0)}, true}})
	c, queue := newCertificates(t, port, append(pods, farm(true))...)
	c.Check(context.Background())
	item, _ := queue.Get()
	queue.Done(item)
	queue.Forget(item)
	c.Check(context.Background())
	if queue.Len() != 0 {
		t.Errorf("the same figures named the farm again")
	}
}
