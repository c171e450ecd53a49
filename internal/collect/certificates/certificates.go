// Package certificates reads what each farm's Envoy frontends made of its
// HTTPS sites' certificates into observations, from which the WebFarm
// reconciler sets the farm's CertificatesReady condition.
package certificates

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/collect"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// Certificates reads, every Interval, the ready frontends of each farm with
// HTTPS sites for the certificates they loaded, stores them and names the
// farms whose figures changed. It runs on the leader only.
type Certificates struct {
	Client client.Client
	// Models are the farms as their reconcilers resolved them (nil: each
	// check resolves them again with Platform).
	Models   *model.Models
	Platform model.Platform
	Interval time.Duration
	HTTP     *http.Client
	// Port is the frontends' status port (0: vocabulary.FrontendStatusPort).
	Port         int
	Observations *observations.Store
	// Farms names the farms whose certificates changed.
	Farms *observations.Notifier
}

// NeedLeaderElection: one reader, as for the other collectors.
func (c *Certificates) NeedLeaderElection() bool { return true }

// Start checks the farms until ctx ends.
func (c *Certificates) Start(ctx context.Context) error {
	return collect.Every(ctx, c.Interval, c.Check)
}

// Check reads every farm's frontends once.
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
	key := client.ObjectKeyFromObject(f)
	// A farm's certificates are its inline HTTPS sites' and its Gateways'
	// HTTPS listeners': the farm's model knows only the first, so every
	// farm's frontends are read, and a farm whose frontends serve none is
	// stored as nothing to judge.
	if _, err := c.FarmModel(f); err != nil {
		c.store(key, nil) // the reconciler reports an invalid spec
		return nil
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(f.Namespace), client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentFrontend, vocabulary.LabelInstance: f.Name,
	}); err != nil {
		return err
	}
	// In a fixed order, so that the same figures are the same observation.
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var frontends observations.FrontendCertificates
	for _, pod := range pods.Items {
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !health.PodReady(&pod) {
			continue
		}
		certs, err := c.read(ctx, pod.Status.PodIP)
		if err != nil {
			continue // a frontend that cannot be read says nothing; the others do
		}
		if len(certs) > 0 {
			frontends = append(frontends, certs)
		}
	}
	c.store(key, frontends)
	return nil
}

// FarmModel is the model of the farm whose HTTPS sites the collector
// checks, or why its spec does not resolve.
func (c *Certificates) FarmModel(f *v1.WebFarm) (model.Farm, error) {
	if c.Models == nil {
		return model.NewModels(c.Platform).Farm(f)
	}
	return c.Models.Farm(f)
}

// store keeps a farm's figures and tells its reconciler when they changed.
func (c *Certificates) store(farm client.ObjectKey, frontends observations.FrontendCertificates) {
	if c.Observations.SetCertificates(farm, frontends) {
		c.Farms.Notify(farm)
	}
}

func (c *Certificates) read(ctx context.Context, ip string) (map[string]envoystats.Certificate, error) {
	port := c.Port
	if port == 0 {
		port = vocabulary.FrontendStatusPort
	}
	url := fmt.Sprintf("http://%s:%d%s?%s", ip, port, vocabulary.FrontendMetricsPath, envoystats.CertificateQuery)
	return collect.Get(ctx, c.HTTP, url, envoystats.Certificates)
}
