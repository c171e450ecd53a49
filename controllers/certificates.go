package controllers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
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
	"webfarm.dev/operator/internal/collect"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
)

// CertificatesReady is the WebFarm condition that says whether every HTTPS
// site's certificate is served, as the frontends themselves report it.
const (
	ConditionCertificatesReady = "CertificatesReady"
	ReasonCertificatesLoaded   = "CertificatesLoaded"
	ReasonInvalidCertificate   = "InvalidCertificate"
)

// certificateVerdict decides CertificatesReady from each ready frontend's
// view of the sites' certificates: a site whose certificate a frontend never
// loaded (its Secret is missing, malformed, or its key does not match) is
// named with its Secret; the other sites serve regardless. ok is false when
// some site is named; message says which and what to do.
func certificateVerdict(sites []model.Site, frontends []map[string]envoystats.Certificate) (ok bool, reason, message string) {
	var bad []string
	for _, s := range sites {
		if s.TLS == nil {
			continue
		}
		if slices.ContainsFunc(frontends, func(f map[string]envoystats.Certificate) bool { return f[s.Name].Loaded == 0 }) {
			bad = append(bad, fmt.Sprintf("site %s (Secret %s)", s.Name, s.TLS.SecretName))
		}
	}
	if len(bad) > 0 {
		return false, ReasonInvalidCertificate, "no valid certificate for " + strings.Join(bad, ", ") +
			": the Secret must exist in the farm's namespace with a PEM tls.crt and its tls.key; the other sites serve"
	}
	return true, ReasonCertificatesLoaded, "every HTTPS site's certificate is served"
}

// Certificates reads, every Interval, the frontends of each farm with HTTPS
// sites for the certificates they loaded, and sets the farm's
// CertificatesReady condition, with a Warning event when a site's
// certificate goes bad. It writes that condition alone, by server-side
// apply under a field manager of its own, so it never overwrites what the
// farm's reconciler writes. It runs on the leader only.
type Certificates struct {
	Client   client.Client
	Recorder events.EventRecorder
	Platform model.Platform
	Interval time.Duration
	HTTP     *http.Client
	// Port is the frontends' status port (0: envoy.StatusPort).
	Port int

	mu     sync.Mutex
	warned map[types.NamespacedName]string // the message last warned about, per farm
}

// certificatesFieldManager owns the CertificatesReady condition.
const certificatesFieldManager = "webfarm-certificates"

// NeedLeaderElection: one writer of the condition.
func (c *Certificates) NeedLeaderElection() bool { return true }

// Start checks the farms until ctx ends.
func (c *Certificates) Start(ctx context.Context) error {
	return collect.Every(ctx, c.Interval, c.Check)
}

// Check reads every farm's frontends once and updates their condition.
func (c *Certificates) Check(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("certificates")
	var farms v1.WebFarmList
	if err := c.Client.List(ctx, &farms); err != nil {
		log.Error(err, "listing farms")
		return
	}
	for i := range farms.Items {
		if err := c.checkFarm(ctx, &farms.Items[i]); err != nil {
			log.Error(err, "checking certificates", "farm", client.ObjectKeyFromObject(&farms.Items[i]))
		}
	}
}

func (c *Certificates) checkFarm(ctx context.Context, f *v1.WebFarm) error {
	m, err := model.ResolveFarm(f, c.Platform)
	if err != nil || len(m.TLSSites()) == 0 {
		return nil // the reconciler reports an invalid spec; no HTTPS, nothing to judge
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(f.Namespace), client.MatchingLabels{
		k8s.LabelManagedBy: k8s.ManagedBy, k8s.LabelComponent: k8s.ComponentFrontend, k8s.LabelInstance: f.Name,
	}); err != nil {
		return err
	}
	var frontends []map[string]envoystats.Certificate
	for _, pod := range pods.Items {
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !health.PodReady(&pod) {
			continue
		}
		certs, err := c.read(ctx, pod.Status.PodIP)
		if err != nil {
			continue // a frontend that cannot be read says nothing; the others do
		}
		frontends = append(frontends, certs)
	}
	if len(frontends) == 0 {
		return nil
	}
	ok, reason, message := certificateVerdict(m.Sites, frontends)
	key := client.ObjectKeyFromObject(f)
	c.mu.Lock()
	if c.warned == nil {
		c.warned = map[types.NamespacedName]string{}
	}
	if ok {
		delete(c.warned, key)
	} else if c.warned[key] != message {
		c.warned[key] = message
		c.Recorder.Eventf(f, nil, corev1.EventTypeWarning, reason, "ReadCertificates", "%s", message)
	}
	c.mu.Unlock()
	return c.setCondition(ctx, f, ok, reason, message)
}

func (c *Certificates) read(ctx context.Context, ip string) (map[string]envoystats.Certificate, error) {
	port := c.Port
	if port == 0 {
		port = envoy.StatusPort
	}
	url := fmt.Sprintf("http://%s:%d%s?%s", ip, port, envoy.MetricsPath, envoystats.CertificateQuery)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return envoystats.Certificates(resp.Body)
}

// setCondition applies CertificatesReady when it changed; its transition
// time moves only with its status.
func (c *Certificates) setCondition(ctx context.Context, f *v1.WebFarm, ok bool, reason, message string) error {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	message = FitConditionMessage(message)
	since := metav1.Now()
	if old := meta.FindStatusCondition(f.Status.Conditions, ConditionCertificatesReady); old != nil {
		if old.Status == status && old.Reason == reason && old.Message == message && old.ObservedGeneration == f.Generation {
			return nil
		}
		if old.Status == status {
			since = old.LastTransitionTime
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "WebFarm",
		"metadata":   map[string]any{"name": f.Name, "namespace": f.Namespace},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": ConditionCertificatesReady, "status": string(status), "reason": reason, "message": message,
			"lastTransitionTime": since.UTC().Format(time.RFC3339), "observedGeneration": f.Generation,
		}}},
	}}
	return c.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(certificatesFieldManager), client.ForceOwnership)
}
