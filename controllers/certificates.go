package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
)

// CertificatesReady is the WebFarm condition that says whether every HTTPS
// site's certificate is served, as the frontends themselves report it.
const (
	ConditionCertificatesReady = "CertificatesReady"
	ReasonCertificatesLoaded   = "CertificatesLoaded"
	ReasonInvalidCertificate   = "InvalidCertificate"
)

// certificateVerdict decides CertificatesReady from each ready frontend's
// view of the farm's certificates: a site (or Gateway listener) whose
// certificate a frontend never loaded (its Secret is missing, malformed, or
// its key does not match) is named with its Secret; the other sites serve
// regardless. ok is false when some certificate is named; message says
// which and what to do.
func certificateVerdict(certs []model.Certificate, frontends observations.FrontendCertificates) (ok bool, reason, message string) {
	var bad []string
	for _, c := range certs {
		if !certificateLoaded(c, frontends) {
			what := "site " + c.Name
			if c.Name == model.GatewayCertificateName(c.SecretName) {
				what = "Gateway listeners"
			}
			bad = append(bad, fmt.Sprintf("%s (Secret %s)", what, c.SecretName))
		}
	}
	if len(bad) > 0 {
		return false, ReasonInvalidCertificate, "no valid certificate for " + strings.Join(bad, ", ") +
			": the Secret must exist in the farm's namespace with a PEM tls.crt and its tls.key; the other sites serve"
	}
	return true, ReasonCertificatesLoaded, "every HTTPS site's certificate is served"
}

// setCertificates sets CertificatesReady from what the certificates
// collector (internal/collect/certificates) stored of the farm's frontends
// and the farm's model m (invalid: why the farm's spec does not resolve),
// with a Warning event when a site's certificate goes bad. With nothing
// stored (no HTTPS site, no frontend read yet) the condition stays as it
// is. A condition an older operator applied under a field manager of its
// own is simply overwritten: the status write is a merge patch.
func (r *WebFarmReconciler) setCertificates(farm *v1.WebFarm, m model.Farm, invalid error) {
	if r.Observations == nil {
		return
	}
	frontends, ok := r.Observations.Certificates(client.ObjectKeyFromObject(farm))
	if !ok {
		return
	}
	if invalid != nil || !m.ServesHTTPS() {
		return // the reconciler reports an invalid spec; no HTTPS, nothing to judge
	}
	ready, reason, message := certificateVerdict(m.Certificates(), frontends)
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	before := slices.Clone(farm.Status.Conditions)
	setCondition(&farm.Status.Conditions, metav1.Condition{Type: ConditionCertificatesReady, Status: status, Reason: reason,
		Message: message, ObservedGeneration: farm.Generation})
	if !ready && reasonChanged(before, farm.Status.Conditions, ConditionCertificatesReady) {
		r.Recorder.Eventf(farm, nil, corev1.EventTypeWarning, reason, "ReadCertificates", "%s", message)
	}
}

// certificateLoaded: every frontend read has loaded the certificate.
func certificateLoaded(c model.Certificate, frontends observations.FrontendCertificates) bool {
	for _, f := range frontends {
		if f[c.Name].Loaded == 0 {
			return false
		}
	}
	return true
}
