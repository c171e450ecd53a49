package controllers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
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
	"k8s.io/client-go/tools/events"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// selfSigned is a PEM certificate and key for host.
func selfSigned(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

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
	c, k := selfSigned(t, "blog.example")
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
	pod := readyPod(t, ns, "contoso-frontend-0", k8s.ComponentFrontend, "contoso", "node-a")
	pod.Status.PodIP, pod.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	if err := k8sClient.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}

	recorder := events.NewFakeRecorder(10)
	certs := &controllers.Certificates{Client: k8sClient, Recorder: recorder, Platform: platform,
		HTTP: &http.Client{Timeout: 2 * time.Second}, Port: port}
	testutil.Eventually(t, timeout, func() error {
		certs.Check(context.Background())
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
	certs.Check(context.Background())
	select {
	case e := <-recorder.Events:
		t.Errorf("a second event: %q", e)
	default:
	}
}
