package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/apply"
	certcollect "webfarm.dev/operator/internal/collect/certificates"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

func TestAFarmNamesTheSiteAndSecretWhoseCertificateTheFrontendCouldNotLoad(t *testing.T) {
	ns := newNamespace(t)
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contoso"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: "web"}}, TLS: v1.SiteTLS{SecretName: "blog-tls"}},
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "web"}}, TLS: v1.SiteTLS{SecretName: "shop-tls"}},
	}}}
	create(t, farm)

	// The farm's frontend, run by the real Envoy: blog's certificate is
	// valid, shop's Secret holds no certificate.
	m, err := model.ResolveFarm(farm, platform)
	if err != nil {
		t.Fatal(err)
	}
	routing, err := envoy.FarmRouting(m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// As a Secret volume holds them (the links beside "..data" are not read).
	data := filepath.Join(localenvoy.CertDir(dir, "blog"), "..data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	c, k := testutil.SelfSigned(t, "blog.example")
	for name, content := range map[string][]byte{"tls.crt": c, "tls.key": k} {
		if err := os.WriteFile(filepath.Join(data, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), dir, m, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)
	admin, err := url.Parse(fe.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(admin.Port())

	// A ready frontend pod at that address (the admin interface serves
	// the same Prometheus page as the status port).
	pod := readyPod(t, ns, "contoso-frontend-0", vocabulary.ComponentFrontend, "contoso", "node-a")
	pod.Status.PodIP, pod.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	if err := k8sClient.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}

	// The running operator has judged the farm's readiness: the only event
	// here is about its certificates.
	waitForCondition(t, ns, "contoso", v1.ConditionReady)
	recorder := events.NewFakeRecorder(10)
	certs := certificatesCollector(t, port, recorder)
	testutil.Eventually(t, timeout, func() error {
		if err := certs.Check(ns, "contoso"); err != nil {
			return err
		}
		var got v1.WebFarm
		if err := get(&got, ns, "contoso"); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, controllers.ConditionCertificatesReady)
		if cond == nil {
			return fmt.Errorf("no %s condition: %v", controllers.ConditionCertificatesReady, got.Status.Conditions)
		}
		if cond.Status != metav1.ConditionFalse || cond.Reason != controllers.ReasonInvalidCertificate ||
			!strings.Contains(cond.Message, "site shop (Secret shop-tls)") || strings.Contains(cond.Message, "blog") {
			return fmt.Errorf("condition %+v", cond)
		}
		return nil
	})
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "Warning") || !strings.Contains(e, "shop-tls") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no Warning event")
	}
	// Checking again changes nothing and warns no more.
	if err := certs.Check(ns, "contoso"); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-recorder.Events:
		t.Errorf("a second event: %q", e)
	default:
	}
}

// certificateCheck is the certificates collector with a WebFarm reconciler of
// its own: the store between them is the test's.
type certificateCheck struct {
	collector *certcollect.Certificates
	reconcile *controllers.WebFarmReconciler
}

// certificatesCollector reads the frontends' status pages on port and
// records the reconciler's events with recorder.
func certificatesCollector(t *testing.T, port int, recorder events.EventRecorder) certificateCheck {
	t.Helper()
	store := &observations.Store{}
	return certificateCheck{
		collector: &certcollect.Certificates{Client: k8sClient, Platform: platform, HTTP: &http.Client{Timeout: 2 * time.Second}, Port: port,
			Observations: store},
		reconcile: &controllers.WebFarmReconciler{Client: k8sClient, Applier: &apply.Applier{Client: k8sClient}, Platform: platform,
			Recorder: recorder, Observations: store},
	}
}

// Check reads the frontends once and reconciles the farm.
func (c certificateCheck) Check(ns, farm string) error {
	c.collector.Check(context.Background())
	_, err := c.reconcile.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: farm}})
	return err
}

// waitForCondition waits until the running operator has set a condition of the farm.
func waitForCondition(t *testing.T, ns, farm, condition string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		var got v1.WebFarm
		if err := get(&got, ns, farm); err != nil {
			return err
		}
		if meta.FindStatusCondition(got.Status.Conditions, condition) == nil {
			return fmt.Errorf("no %s condition yet", condition)
		}
		return nil
	})
}

func TestTheFarmsReconcilerTakesOverTheCertificateConditionAnOlderOperatorApplied(t *testing.T) {
	ns := newNamespace(t)
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contoso"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "web"}}, TLS: v1.SiteTLS{SecretName: "shop-tls"}},
	}}}
	create(t, farm)
	waitForCondition(t, ns, "contoso", v1.ConditionReady)
	// An older operator set the condition by server-side apply, under a
	// field manager of its own.
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "WebFarm",
		"metadata": map[string]any{"name": "contoso", "namespace": ns},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": controllers.ConditionCertificatesReady, "status": "True", "reason": controllers.ReasonCertificatesLoaded,
			"message": "every HTTPS site's certificate is served", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			"observedGeneration": int64(1),
		}}},
	}}
	if err := k8sClient.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(old),
		client.FieldOwner("webfarm-certificates"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	store := &observations.Store{}
	r := &controllers.WebFarmReconciler{Client: k8sClient, Applier: &apply.Applier{Client: k8sClient}, Platform: platform,
		Recorder: discard{}, Observations: store}
	key := types.NamespacedName{Namespace: ns, Name: "contoso"}
	expect := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		testutil.Eventually(t, timeout, func() error {
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				return err
			}
			var got v1.WebFarm
			if err := get(&got, ns, "contoso"); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, controllers.ConditionCertificatesReady)
			if cond == nil || cond.Status != status || cond.Reason != reason {
				return fmt.Errorf("condition %+v, want %s %s", cond, status, reason)
			}
			if ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady); ready == nil {
				return fmt.Errorf("the write lost the Ready condition: %v", got.Status.Conditions)
			}
			return nil
		})
	}
	// The frontend now fails to load shop's certificate, then loads it again.
	store.SetCertificates(key, observations.FrontendCertificates{{"shop": {Rejected: 1}}})
	expect(metav1.ConditionFalse, controllers.ReasonInvalidCertificate)
	store.SetCertificates(key, observations.FrontendCertificates{{"shop": {Loaded: 1, Rejected: 1}}})
	expect(metav1.ConditionTrue, controllers.ReasonCertificatesLoaded)
	// With nothing to judge the condition stays as the reconciler wrote it.
	store.SetCertificates(key, nil)
	expect(metav1.ConditionTrue, controllers.ReasonCertificatesLoaded)
}
